import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Backoff, retry, supervise } from '../src/supervise.js';

describe('Backoff', () => {
  it('doubles from the first delay up to the cap, and starts over after a good run', () => {
    const backoff = new Backoff({ firstMs: 1_000, maxMs: 30_000, stableMs: 60_000 });
    expect([1, 2, 3, 4, 5, 6, 7].map(() => backoff.failed())).toEqual([1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000]);
    expect(backoff.failures).toBe(7);
    expect(backoff.failed(60_000)).toBe(30_000); // not longer than stableMs: still failing
    expect(backoff.failed(60_001)).toBe(1_000);
    expect(backoff.failures).toBe(1);
    backoff.failed();
    backoff.reset();
    expect(backoff.failed()).toBe(1_000);
  });

  it('counts a run as good past the cap when no stableMs is given', () => {
    const backoff = new Backoff({ firstMs: 2_000, maxMs: 60_000 });
    backoff.failed();
    expect(backoff.failed(60_000)).toBe(4_000);
    expect(backoff.failed(60_001)).toBe(2_000);
  });
});

describe('supervise', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('runs again after each end with the backoff, resets after a long run, and stops at once when aborted', async () => {
    const stop = new AbortController();
    const exits: Array<[unknown, number]> = [];
    const runs: number[] = [];
    // Runs 1–3 fail at once; run 4 lasts 40 s (longer than maxMs), run 5 fails at once.
    const run = async (signal: AbortSignal): Promise<string> => {
      runs.push(Date.now());
      expect(signal).toBe(stop.signal);
      if (runs.length === 4) await new Promise((resolve) => setTimeout(resolve, 40_000));
      if (runs.length === 2) throw new Error('refused');
      return `ended ${runs.length}`;
    };
    const done = supervise(run, { signal: stop.signal, firstMs: 1_000, maxMs: 30_000, onExit: (why, delayMs) => exits.push([why, delayMs]) });
    await vi.advanceTimersByTimeAsync(0);
    expect(exits).toEqual([['ended 1', 1_000]]);
    await vi.advanceTimersByTimeAsync(999);
    expect(runs).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(runs).toHaveLength(2);
    expect(exits[1]?.[0]).toBeInstanceOf(Error);
    expect(exits[1]?.[1]).toBe(2_000);
    await vi.advanceTimersByTimeAsync(2_000);
    expect(exits[2]).toEqual(['ended 3', 4_000]);
    await vi.advanceTimersByTimeAsync(4_000 + 40_000);
    expect(exits[3]).toEqual(['ended 4', 1_000]); // a good run: the backoff starts over
    await vi.advanceTimersByTimeAsync(1_000);
    expect(exits[4]).toEqual(['ended 5', 2_000]);
    stop.abort();
    await done; // the 2 s wait ends at once: no timer advanced
    expect(runs).toHaveLength(5);
  });

  it('does not report a run that ended because it was stopped', async () => {
    const stop = new AbortController();
    const onExit = vi.fn();
    const done = supervise((signal) => new Promise((_resolve, reject) => signal.addEventListener('abort', () => reject(new Error('aborted')))), {
      signal: stop.signal, firstMs: 10, maxMs: 100, onExit,
    });
    stop.abort();
    await done;
    expect(onExit).not.toHaveBeenCalled();
  });
});

describe('retry', () => {
  it('retries what is worth retrying until attempts are used up, waiting the given delays', async () => {
    vi.useFakeTimers();
    try {
      const busy = Object.assign(new Error('busy'), { code: 'EAGAIN' });
      const tries: number[] = [];
      const retried: number[] = [];
      const result = retry((attempt) => {
        tries.push(Date.now());
        return attempt < 3 ? Promise.reject(busy) : Promise.resolve('ok');
      }, { attempts: 3, retryIf: (e) => (e as { code?: string }).code === 'EAGAIN', delayMs: (attempt) => attempt * 100, onRetry: (_e, attempt) => retried.push(attempt) });
      await vi.advanceTimersByTimeAsync(300);
      await expect(result).resolves.toBe('ok');
      expect(retried).toEqual([1, 2]);
      expect(tries.map((t) => t - (tries[0] ?? 0))).toEqual([0, 100, 300]);

      let calls = 0;
      const usedUp = retry(() => {
        calls += 1;
        return Promise.reject(busy);
      }, { attempts: 2, retryIf: () => true });
      await expect(usedUp).rejects.toBe(busy);
      expect(calls).toBe(2);
    } finally {
      vi.useRealTimers();
    }
  });

  it('throws at once what is not worth retrying', async () => {
    const fatal = new Error('no such file');
    let calls = 0;
    await expect(retry(() => {
      calls += 1;
      return Promise.reject(fatal);
    }, { attempts: 5, retryIf: () => false })).rejects.toBe(fatal);
    expect(calls).toBe(1);
  });
});
