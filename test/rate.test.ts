import { describe, expect, it } from 'vitest';
import { TokenBucket } from '../src/rate.js';
import { AudioPace } from '../src/wyoming/pace.js';

describe('TokenBucket', () => {
  it('take: lets a sender overdraw and says how long until the allowance covers it; refills at perS up to burst', () => {
    const bucket = new TokenBucket({ perS: 1.5, burst: 10 }, 0);
    expect(bucket.take(10, 0)).toBe(0);
    expect(bucket.take(3, 0)).toBe(2_000); // 3 s of audio owed at 1.5 a second
    expect(bucket.take(0, 2_000)).toBe(0); // paid back
    expect(bucket.take(11, 3_600_000)).toBeCloseTo(666.67, 1); // an hour quiet saved up only `burst`
  });

  it('tryTake: takes only what the allowance covers, and a refusal costs nothing', () => {
    const bucket = new TokenBucket({ perS: 0.5, burst: 5 }, 0);
    expect([1, 2, 3, 4, 5, 6].map(() => bucket.tryTake(1, 0))).toEqual([true, true, true, true, true, false]);
    expect(bucket.tryTake(1, 1_999)).toBe(false);
    expect(bucket.tryTake(1, 2_000)).toBe(true); // refusals took nothing: one back after 2 s
    expect(bucket.tryTake(1, 2_000)).toBe(false);
  });

  it('AudioPace is the bucket in seconds of audio, with its defaults (1.5× real time, 10 s at once)', () => {
    const pace = new AudioPace(undefined, undefined, 0);
    expect([pace.perS, pace.burst]).toEqual([1.5, 10]);
    expect(pace.take(10, 0)).toBe(0);
    expect(pace.take(1.5, 0)).toBe(1_000);
  });
});
