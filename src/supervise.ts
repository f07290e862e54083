/**
 * The one shape for "try again later": a backoff that doubles up to a cap and starts over after
 * a good run, a supervisor that keeps a long-running part going with it (a satellite link, the
 * microphone), and a bounded retry for one call that can fail for a moment (a busy socket, a
 * port taken between choosing and binding it). Each caller keeps its own delays; waits end at
 * once when the caller's signal aborts.
 */

export interface BackoffOptions {
  /** The first delay (ms); each failure in a row doubles it. */
  firstMs: number;
  /** The longest delay (ms). */
  maxMs: number;
  /** A run longer than this (ms) was a good one: the next failure starts over at `firstMs`. Default `maxMs`. */
  stableMs?: number;
}

/** Exponential backoff with a cap and a reset after a good run. */
export class Backoff {
  readonly #o: BackoffOptions;
  #failures = 0;

  constructor(options: BackoffOptions) {
    this.#o = options;
  }

  /** Failures in a row since the last good run. */
  get failures(): number {
    return this.#failures;
  }

  /**
   * A run that lasted `ranMs` (0: it never started) has failed: the delay before the next
   * one (ms), `firstMs · 2^(failures in a row − 1)` up to `maxMs`.
   */
  failed(ranMs = 0): number {
    if (ranMs > (this.#o.stableMs ?? this.#o.maxMs)) this.#failures = 0;
    this.#failures += 1;
    return Math.min(this.#o.maxMs, this.#o.firstMs * 2 ** (this.#failures - 1));
  }

  /** Start over: the next failure waits `firstMs`. */
  reset(): void {
    this.#failures = 0;
  }
}

export interface SuperviseOptions extends BackoffOptions {
  /** Stops the runs: the current run is given it, and a wait in between ends at once. */
  signal: AbortSignal;
  /**
   * A run ended (what it resolved with, or what it threw) and the next starts in `delayMs`.
   * Not called when the run ended because `signal` aborted.
   */
  onExit: (why: unknown, delayMs: number) => void;
}

/**
 * Keep `run` going until `signal` aborts: whenever it ends, resolved or thrown, wait the
 * backoff's delay and run it again. Resolves once aborted; never rejects.
 */
export async function supervise(run: (signal: AbortSignal) => Promise<unknown>, options: SuperviseOptions): Promise<void> {
  const { signal } = options;
  const backoff = new Backoff(options);
  while (!signal.aborted) {
    const startedMs = Date.now();
    const why = await run(signal).catch((error: unknown) => error);
    if (signal.aborted) return;
    const delayMs = backoff.failed(Date.now() - startedMs);
    options.onExit(why, delayMs);
    await pause(delayMs, signal);
  }
}

export interface RetryOptions {
  /** How many tries in all, the first included (≥ 1). */
  attempts: number;
  /** Whether a failure is worth another try; others are thrown at once. */
  retryIf: (error: unknown) => boolean;
  /** The wait before try `attempt` + 1, after try `attempt` (1-based) failed (ms). Default no wait. */
  delayMs?: (attempt: number) => number;
  /** Told before each retry: what failed, and which try it was (1-based). */
  onRetry?: (error: unknown, attempt: number) => void;
}

/** Call `once` until it succeeds, a failure is not worth retrying, or `attempts` are used up (the last failure is thrown). */
export async function retry<T>(once: (attempt: number) => Promise<T>, options: RetryOptions): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await once(attempt);
    } catch (error) {
      if (attempt >= options.attempts || !options.retryIf(error)) throw error;
      options.onRetry?.(error, attempt);
      const delayMs = options.delayMs?.(attempt) ?? 0;
      if (delayMs > 0) await pause(delayMs);
    }
  }
}

/**
 * Wait `ms`, or until `signal` aborts (resolves either way). On the global timers rather than
 * node:timers/promises, so fake timers drive it in tests.
 */
function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted === true) return resolve();
    const done = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}
