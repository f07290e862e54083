/**
 * The echo canceller's warm filter hands over to the long one only once the long one has left
 * at least 1 dB less for 2 s (echo.ts `WARM_AHEAD_S`, `WARM_MARGIN`), not at the first moment it
 * is ahead: handed over at a brief dip, a long filter that had only caught up in a pause missed
 * the person's wake word in the live barge-in test. The filters are fakes whose residue the test
 * sets (the edge); the canceller, its delay estimate and its hand-over run for real. No clock:
 * the frames are the time.
 */
import { describe, expect, it } from 'vitest';
import { EchoCanceller, EchoReference, type EchoEngine } from '../src/pipeline/echo.js';

const RATE = 16_000;
const FRAME = 256;

/** A filter that leaves `residueDb(s)` of the microphone, `s` being the seconds of audio it has filtered. */
function fakeFilter(residueDb: (s: number) => number): EchoEngine & { destroyed: boolean } {
  let filtered = 0;
  return {
    name: 'speexdsp',
    frameSamples: FRAME,
    destroyed: false,
    process(mic) {
      const gain = 10 ** (residueDb(filtered / RATE) / 20);
      filtered += mic.length;
      return Int16Array.from(mic, (v) => Math.round(v * gain));
    },
    destroy() {
      this.destroyed = true;
    },
  };
}

describe('the warm filter\'s hand-over', () => {
  it('does not hand over at a brief dip of the long filter, and does once it has been 1 dB ahead for 2 s', () => {
    // IRIS's audio: 11.2 s of noise (140 chunks) (its delay is found at once); a fixed room: 100 ms late, a reflection 20 ms after.
    let seed = 7;
    const played = Int16Array.from({ length: 140 * 1280 }, () => ((seed = (Math.imul(seed, 1103515245) + 12345) & 0x7fffffff) / 0x7fffffff - 0.5) * 6000);
    const mic = Int16Array.from(played, (_, i) => Math.round(0.5 * (played[i - 1600] ?? 0) + 0.2 * (played[i - 1920] ?? 0)));
    const reference = new EchoReference(30);
    reference.write(played, 0);
    // The warm filter leaves −10 dB. The long one, fresh, leaves −8 dB, dips to −20 dB for 1 s
    // (1 to 2 s in: ahead of the warm one by 1 dB for ~0.9 s), is back at −8 dB, and from 4 s on leaves −20 dB.
    const warm = fakeFilter(() => -10);
    const long = fakeFilter((s) => (s >= 1 && s < 2) || s >= 4 ? -20 : -8);
    const canceller = EchoCanceller.withEngines(reference, long, warm);
    const out = new Int16Array(mic.length);
    for (let at = 0; at + 1280 <= mic.length; at += 1280) out.set(canceller.process(mic.subarray(at, at + 1280), at), at);
    canceller.destroy();

    // What each frame kept of the microphone (dB), from the first frame filtered on (the delay found).
    const keptDb: number[] = [];
    for (let at = 0; at + FRAME <= out.length; at += FRAME) {
      let inE = 0;
      let outE = 0;
      for (let i = at; i < at + FRAME; i++) [inE, outE] = [inE + (mic[i] ?? 0) ** 2, outE + (out[i] ?? 0) ** 2];
      keptDb.push(10 * Math.log10(outE / inE));
    }
    const first = keptDb.findIndex((db) => db < -1);
    expect(first).toBeGreaterThan(0);
    const filtered = keptDb.slice(first);
    const frameS = FRAME / RATE;
    const at = (s: number) => Math.round(s / frameS);
    // Through the dip and after it, until the long filter is ahead for good: the warm filter's output.
    for (const db of filtered.slice(0, at(6))) expect(db).toBeCloseTo(-10, 1);
    // Handed over once the long filter had left ≥ 1 dB less for 2 s (from ~4.4 s: its 0.5 s average lags): the long one's output, for good.
    const handedOver = filtered.findIndex((db) => Math.abs(db + 20) < 0.1);
    expect(handedOver * frameS).toBeGreaterThan(6);
    expect(handedOver * frameS).toBeLessThan(7);
    for (const db of filtered.slice(handedOver)) expect(db).toBeCloseTo(-20, 1);
    expect(warm.destroyed).toBe(true);
  });
});
