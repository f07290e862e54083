/**
 * A server's health (seed 001): from its recent calls and periodic pings — response time,
 * success rate, error count, last success, uptime — and a verdict: healthy, degraded (slow,
 * or failing now and then) or unhealthy (failing). A tool's own `isError` answer is the tool
 * answering, not the server failing; only what never came back counts as a failure.
 */

export type HealthState = 'healthy' | 'degraded' | 'unhealthy' | 'unknown';

export interface HealthReport {
  state: HealthState;
  /** Median response time of the recent calls and pings (ms). */
  response_ms: number | null;
  /** Share of the recent calls and pings that came back (0–1). */
  success_rate: number | null;
  /** Failures since IRIS started. */
  errors: number;
  /** ISO time of the last answer; null when none yet. */
  last_success: string | null;
  last_error?: string;
  /** Seconds the current connection has been up; 0 when not connected. */
  uptime_s: number;
}

/** How many recent calls and pings the verdict looks at. */
const WINDOW = 20;
/** Slower than this (median, ms) is degraded. */
const SLOW_MS = 2_000;

export class Health {
  readonly #recent: { ok: boolean; ms: number }[] = [];
  #errors = 0;
  #lastSuccess: number | undefined;
  #lastError: string | undefined;

  record(ok: boolean, ms: number, error?: string): void {
    this.#recent.push({ ok, ms });
    if (this.#recent.length > WINDOW) this.#recent.shift();
    if (ok) this.#lastSuccess = Date.now();
    else {
      this.#errors += 1;
      this.#lastError = error;
    }
  }

  /**
   * The verdict now; `connected` and `upSince` from the server's connection. `resting`: IRIS
   * stopped it on purpose (idle, or its tools just learnt), which is no failure: the verdict
   * comes from its recent answers alone.
   */
  report(connected: boolean, upSince: number, now = Date.now(), resting = false): HealthReport {
    const answered = this.#recent.filter((r) => r.ok);
    const rate = this.#recent.length === 0 ? null : answered.length / this.#recent.length;
    const times = answered.map((r) => r.ms).sort((a, b) => a - b);
    const median = times.length === 0 ? null : Math.round(times[Math.floor(times.length / 2)] ?? 0);
    const lastThreeFailed = this.#recent.length >= 3 && this.#recent.slice(-3).every((r) => !r.ok);
    let state: HealthState;
    if (!connected && this.#recent.length === 0) state = 'unknown';
    else if ((!connected && !resting) || lastThreeFailed || (rate !== null && rate < 0.5)) state = 'unhealthy';
    else if ((rate !== null && rate < 1) || (median !== null && median > SLOW_MS)) state = 'degraded';
    else state = this.#recent.length === 0 ? 'unknown' : 'healthy';
    const report: HealthReport = {
      state,
      response_ms: median,
      success_rate: rate === null ? null : Math.round(rate * 100) / 100,
      errors: this.#errors,
      last_success: this.#lastSuccess === undefined ? null : new Date(this.#lastSuccess).toISOString(),
      uptime_s: connected ? Math.round((now - upSince) / 1000) : 0,
    };
    if (this.#lastError !== undefined) report.last_error = this.#lastError;
    return report;
  }
}
