/**
 * The one clamp before a timer. Node fires a timer set past 2^31 − 1 ms (24.8 days) after 1 ms,
 * with a TimeoutOverflowWarning: `[tools] timeout_s = 3000000` once timed out every call at
 * once. The config's maxima (schema.ts) keep real values far below; this is the belt under them,
 * for every delay that comes from config or a peer.
 */

/** The longest delay a Node timer takes (ms). */
export const TIMER_MAX_MS = 2 ** 31 - 1;

/** `ms` as a timer can take it: within 0 … TIMER_MAX_MS (NaN: 0). */
export function timerMs(ms: number): number {
  return Number.isNaN(ms) ? 0 : Math.min(Math.max(0, ms), TIMER_MAX_MS);
}
