import { describe, expect, it } from 'vitest';
import { convolve } from '../src/pipeline/echo-memory.js';
import { levinson, ResponseEstimate, RoomFilter } from '../src/pipeline/room-response.js';

const RATE = 16_000;
const TAPS = 6144;
const FRAME = 256;

/** A seeded generator, −0.5 … 0.5. */
function seeded(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
    return state / 2_147_483_648 - 0.5;
  };
}

/** A room: the direct path at 160 samples (the canceller's margin) and a decaying tail. */
function roomTaps(): Float32Array {
  const rand = seeded(7);
  const taps = new Float32Array(TAPS);
  taps[160] = 0.6;
  for (let k = 161; k < 4000; k++) taps[k] = rand() * 0.1 * Math.exp(-(k - 160) / 700);
  return taps;
}

/** Noise as IRIS's reference, with `silentFrom`…`silentTo` silent (a pause). */
function reference(seconds: number, silent?: [number, number]): Int16Array {
  const rand = seeded(3);
  return Int16Array.from({ length: seconds * RATE }, (_, i) => (silent && i >= silent[0] && i < silent[1] ? 0 : Math.round(rand() * 8000)));
}

const energyDb = (a: ArrayLike<number>, b: ArrayLike<number>): number => {
  let x = 0;
  let y = 0;
  for (let i = 0; i < a.length; i++) [x, y] = [x + (a[i] ?? 0) ** 2, y + (b[i] ?? 0) ** 2];
  return 10 * Math.log10(x / y);
};

describe('the room\'s response', () => {
  it('a fixed response takes the echo it predicts off the microphone frame by frame, and forgets what IRIS played before a pause', () => {
    const taps = roomTaps();
    const ref = reference(3);
    const mic = convolve(ref, taps);
    const filter = new RoomFilter(taps, FRAME);
    const out = new Int16Array(mic.length);
    for (let at = 0; at + FRAME <= mic.length; at += FRAME) out.set(filter.cancel(mic.subarray(at, at + FRAME), ref.subarray(at, at + FRAME)), at);
    expect(energyDb(mic, out)).toBeGreaterThan(50); // what is left is rounding
    // After clear(), nothing IRIS played before sounds: silence in, silence out.
    filter.clear();
    const quiet = filter.cancel(new Int16Array(FRAME), new Int16Array(FRAME));
    expect(quiet.every((v) => v === 0)).toBe(true);
    expect(filter.frames).toBe(TAPS / FRAME);
  });

  it('least squares over IRIS and the microphone finds the room\'s response, across a pause, and nothing before IRIS was heard', async () => {
    const taps = roomTaps();
    const estimate = new ResponseEstimate(TAPS, RATE);
    expect(await estimate.solve()).toBeUndefined();
    // Two stretches of IRIS with a pause longer than the response between them.
    const ref = reference(8, [3 * RATE, 4 * RATE]);
    const mic = convolve(ref, taps);
    const noise = seeded(11);
    for (let i = 0; i < mic.length; i++) mic[i] = (mic[i] ?? 0) + Math.round(noise() * 20); // a room's floor
    for (let at = 0; at + FRAME <= mic.length; at += FRAME) {
      if (at >= 3 * RATE + TAPS && at < 4 * RATE) {
        if (at === 3 * RATE + TAPS) estimate.pause();
        continue; // the canceller did not run
      }
      estimate.add(mic.subarray(at, at + FRAME), ref.subarray(at, at + FRAME));
    }
    expect(estimate.heardS).toBeGreaterThan(6.5);
    const found = await estimate.solve();
    expect(found).toHaveLength(TAPS);
    const error = Float32Array.from(taps, (t, k) => t - (found?.[k] ?? 0));
    expect(energyDb(taps, error)).toBeGreaterThan(30);
  });

  it('Levinson\'s recursion solves a symmetric Toeplitz system, and gives up on one that is not positive definite', () => {
    const solve = (r: number[], y: number[]) => {
      const steps = levinson(Float64Array.from(r), Float64Array.from(y));
      let step = steps.next();
      while (!step.done) step = steps.next();
      return step.value;
    };
    // [[4, 1, 0.5], [1, 4, 1], [0.5, 1, 4]] x = [1, 2, 3]
    const x = solve([4, 1, 0.5], [1, 2, 3]);
    const row = (a: number, b: number, c: number) => a * (x?.[0] ?? 0) + b * (x?.[1] ?? 0) + c * (x?.[2] ?? 0);
    expect(row(4, 1, 0.5)).toBeCloseTo(1, 5);
    expect(row(1, 4, 1)).toBeCloseTo(2, 5);
    expect(row(0.5, 1, 4)).toBeCloseTo(3, 5);
    expect(solve([1, 1], [1, 2])).toBeUndefined();
  });
});
