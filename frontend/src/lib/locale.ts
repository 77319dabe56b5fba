// The webview's language tag, made usable by Intl. WebKitGTK takes it from
// the process's locale, so under LANG=C or POSIX (a minimal system, CI)
// navigator.language is "C", which is no BCP 47 tag: Intl.NumberFormat
// refuses it, and uPlot builds one from it when its module loads.

/** FALLBACK_LANGUAGE is the tag used in place of one Intl refuses. */
export const FALLBACK_LANGUAGE = "en-US";

/** usableLanguage reports whether Intl accepts tag. */
export function usableLanguage(tag: string | undefined): boolean {
  if (!tag) return false;
  try {
    new Intl.NumberFormat(tag);
    return true;
  } catch {
    return false;
  }
}

/**
 * ensureUsableLanguage gives nav a language Intl accepts when its own is
 * refused (an own property over Navigator's getter), and returns the
 * language in force.
 */
export function ensureUsableLanguage(nav: Navigator = navigator): string {
  if (usableLanguage(nav.language)) return nav.language;
  Object.defineProperty(nav, "language", { value: FALLBACK_LANGUAGE, configurable: true });
  return nav.language;
}
