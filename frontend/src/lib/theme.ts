// The theme's colours for what CSS cannot colour (a chart's canvas): read
// from the tokens in style.css, again whenever the system switches between
// light and dark, so a chart keeps the AA contrast the tokens are chosen for.

/** The tokens a chart draws with. */
export const CHART_TOKENS = ["fg", "muted", "faint", "border", "panel", "accent", "queued", "claimed", "blocked", "done", "cancelled"] as const;
export type ThemeColors = Record<(typeof CHART_TOKENS)[number], string>;

/** themeColors reads the tokens' current values (fallbacks where no stylesheet is loaded, as in unit tests). */
export function themeColors(root: Element = document.documentElement): ThemeColors {
  const css = getComputedStyle(root);
  const out = {} as ThemeColors;
  for (const t of CHART_TOKENS) out[t] = css.getPropertyValue(`--${t}`).trim() || "#666666";
  return out;
}

/** onThemeChange calls cb when the system switches between light and dark; it returns the unsubscribe function. */
export function onThemeChange(cb: () => void): () => void {
  if (typeof window === "undefined" || !window.matchMedia) return () => {};
  const mq = window.matchMedia("(prefers-color-scheme: dark)");
  const fn = () => cb();
  mq.addEventListener("change", fn);
  return () => mq.removeEventListener("change", fn);
}
