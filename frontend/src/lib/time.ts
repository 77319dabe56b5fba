/** Milliseconds of an ISO timestamp, or NaN. */
export function ms(iso: string | undefined): number {
  return iso ? Date.parse(iso) : Number.NaN;
}

/** "just now", "4 min ago", "3 h ago", "2 d ago". */
export function ago(iso: string | undefined, now: number): string {
  const t = ms(iso);
  if (Number.isNaN(t)) return "never";
  const s = Math.max(0, Math.round((now - t) / 1000));
  if (s < 45) return "just now";
  const m = Math.round(s / 60);
  if (m < 60) return `${m} min ago`;
  const h = Math.round(m / 60);
  if (h < 36) return `${h} h ago`;
  return `${Math.round(h / 24)} d ago`;
}

/** A duration in ms as "12s", "4m 05s", "1h 20m". Negative durations are shown as "0s". */
export function duration(d: number): string {
  const s = Math.max(0, Math.floor(d / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${String(s % 60).padStart(2, "0")}s`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h}h ${String(m % 60).padStart(2, "0")}m`;
  return `${Math.floor(h / 24)}d ${h % 24}h`;
}

/** Local date and time, short. */
export function when(iso: string | undefined): string {
  const t = ms(iso);
  if (Number.isNaN(t)) return "—";
  return new Date(t).toLocaleString(undefined, { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" });
}

/** A duration in ms for a chart's axis: "250ms" below a second, else as duration. */
export function shortDuration(d: number): string {
  return d > 0 && d < 1000 ? `${Math.round(d)}ms` : duration(d);
}

/**
 * tickDuration is shortDuration for an axis tick: under a minute it keeps a
 * tenth of a second (a tick at 2,500 ms read "2s", beside one at 2,000).
 */
export function tickDuration(d: number): string {
  if (d >= 1000 && d < 60_000 && d % 1000 !== 0) return `${Number((d / 1000).toFixed(1))}s`;
  return shortDuration(d);
}
