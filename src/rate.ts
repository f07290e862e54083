/**
 * The one rate limiter: a token bucket. An allowance grows at `perS` a second up to `burst`
 * (a sender quiet for an hour has not saved up an hour of it) and each use takes from it.
 * `take` lets a sender overdraw and says how long until it is covered (pace a reader, or drop
 * a sender that overdraws: seconds of audio); `tryTake` refuses without taking (count requests:
 * a satellite's run-pipeline asks). Times are passed in (ms, performance.now() by default), so
 * tests need no clock.
 */

export interface TokenBucketOptions {
  /** How fast the allowance grows (units a second). */
  perS: number;
  /** The most it holds, and what it starts with (units). */
  burst: number;
}

export class TokenBucket {
  readonly perS: number;
  readonly burst: number;
  #credit: number;
  #atMs: number;

  constructor(options: TokenBucketOptions, nowMs = performance.now()) {
    this.perS = options.perS;
    this.burst = options.burst;
    this.#credit = options.burst;
    this.#atMs = nowMs;
  }

  /** Take `amount` at `nowMs`, overdrawing if need be: how long (ms) until the allowance covers it; 0 when it does now. */
  take(amount: number, nowMs = performance.now()): number {
    this.#credit = this.#refilled(nowMs) - amount;
    return this.#credit >= 0 ? 0 : (-this.#credit / this.perS) * 1000;
  }

  /** Take `amount` at `nowMs` if the allowance covers it (true); otherwise take nothing (false). */
  tryTake(amount: number, nowMs = performance.now()): boolean {
    const credit = this.#refilled(nowMs);
    if (credit < amount) {
      this.#credit = credit;
      return false;
    }
    this.#credit = credit - amount;
    return true;
  }

  #refilled(nowMs: number): number {
    const credit = Math.min(this.burst, this.#credit + ((nowMs - this.#atMs) / 1000) * this.perS);
    this.#atMs = nowMs;
    return credit;
  }
}
