/**
 * Study (session 22; docs/room.md, "The room's response by least squares"): how well does each
 * description of a room cancel IRIS's next reply? speexdsp alone, the reference at the true delay;
 * the earlier run's filter heard IRIS's first reply 4 times (as with the rehearsal). Arms on the
 * second reply, ERLE in 2 s windows: that filter going on; subtracted alone (no adaptive filter):
 * the taps speexdsp reads out, the room's true response (sox's reverb of an impulse), the
 * least-squares response over the first reply (`ResponseEstimate`, each load in LAMBDAS); a fresh
 * speexdsp after the least-squares response or the true one (the cascade echo.ts runs); and fresh
 * filters taught on noise through the read-out, the truth or least squares (session 20's priming).
 * Run: OMP_NUM_THREADS=1 taskset -c 1 npx tsx scripts/study-room-response.ts
 */
import { convolve } from '../src/pipeline/echo-memory.js';
import { ResponseEstimate } from '../src/pipeline/room-response.js';
import { SpeexEcho } from '../src/pipeline/speexdsp.js';
import { random } from './lib/bench.js';
import { RATE, sox } from './lib/room-bench/room.js';
import { ArmTally, twoRepliesRooms } from './lib/room-bench/study.js';

const rand = random(Number(process.env.SEED ?? 20));
const rooms = Number(process.env.ROOMS ?? 3);
const names = (process.env.STUDY_CONDITIONS ?? 'echo 0 dB,echo +12 dB,echo 0 dB RT60 0.6').split(',');
const lambdas = (process.env.LAMBDAS ?? '0.001,0.01').split(',').map(Number);
const F = 256;
const TAPS = 6144;
const settings = { frameSamples: F, filterSamples: TAPS, rate: RATE, echoSuppressDb: 0, echoSuppressActiveDb: -15, noiseSuppressDb: 0 };
const tally = new ArmTally();
const clamp = (v: number) => Math.max(-32768, Math.min(32767, v));

/** Session 20's priming: 2 s of noise through `taps`, heard 12 times, silence after each pass. */
function primeOnNoise(filter: SpeexEcho, taps: Float32Array): void {
  const ref = Int16Array.from({ length: 2 * RATE }, () => Math.round((rand() * 2 - 1) * 1000));
  const mic = convolve(ref, taps);
  const silence = new Int16Array(F);
  for (let pass = 0; pass < 12; pass++) {
    for (let at = 0; at + F <= ref.length; at += F) filter.process(mic.subarray(at, at + F), ref.subarray(at, at + F));
    for (let at = 0; at < TAPS + F; at += F) filter.process(silence, silence);
  }
}

for (const { name, k, r, ref, cut, erles } of twoRepliesRooms(names, rooms, rand, F)) {
  const row: string[] = [];
  const add = (arm: string, e: number[]) => tally.add(`${name} ${arm}`, arm, e, row);
  /** The second reply through `echo`, the microphone less `taps`' echo first (none: as it is). */
  const run = (echo: SpeexEcho | undefined, taps?: Float32Array): Int16Array => {
    const fixed = taps ? convolve(ref, taps) : undefined;
    const mic = fixed ? Int16Array.from(r.mic, (v, i) => clamp(v - (fixed[i] ?? 0))) : r.mic;
    if (!echo) return mic;
    const out = new Int16Array(r.mic.length);
    for (let at = cut; at + F <= r.mic.length; at += F) out.set(echo.process(mic.subarray(at, at + F), ref.subarray(at, at + F)), at);
    return out;
  };
  const withSpeex = async (arm: string, taps: Float32Array | undefined, primed?: Float32Array) => {
    const echo = await SpeexEcho.create(settings);
    if (primed) primeOnNoise(echo, primed);
    add(arm, erles(run(echo, taps)));
    echo.destroy();
  };
  // The earlier run: its filter hears the first reply 4 times, then (no restart) goes on.
  const teacher = await SpeexEcho.create(settings);
  const zero = new Int16Array(F);
  for (let pass = 0; pass < 4; pass++) {
    for (let at = 0; at + F <= cut; at += F) teacher.process(r.mic.subarray(at, at + F), ref.subarray(at, at + F));
    for (let z = 0; z < 32; z++) teacher.process(zero, zero);
  }
  const read = teacher.impulseResponse();
  add('going on', erles(run(teacher)));
  teacher.destroy();
  // The true response: the room's reverb of an impulse, at its gain, from the margin.
  const impulse = new Int16Array(RATE);
  impulse[0] = 30000;
  const h = sox(impulse, r.echo?.reverb ?? []);
  const truth = Float32Array.from({ length: TAPS }, (_, i) => (i < 160 ? 0 : ((h[i - 160] ?? 0) / 30000) * (r.echo?.gain ?? 0)));
  const estimate = new ResponseEstimate(TAPS, RATE);
  for (let at = 0; at + F <= cut; at += F) estimate.add(r.mic.subarray(at, at + F), ref.subarray(at, at + F));
  const ls: Float32Array[] = [];
  for (const load of lambdas) ls.push((await estimate.solve(load)) ?? new Float32Array(TAPS));
  add('alone: read out', erles(run(undefined, read)));
  add('alone: truth', erles(run(undefined, truth)));
  lambdas.forEach((load, i) => add(`alone: least squares ${load}`, erles(run(undefined, ls[i]))));
  await withSpeex(`least squares ${lambdas[0]}, then speexdsp`, ls[0]);
  await withSpeex('truth, then speexdsp', truth);
  await withSpeex('speexdsp primed on the read-out', undefined, read);
  await withSpeex('speexdsp primed on the truth', undefined, truth);
  await withSpeex(`speexdsp primed on least squares ${lambdas[0]}`, undefined, ls[0]);
  console.log(`${name} ${k} (${(cut / RATE).toFixed(1)} s) | ${row.join(' | ')}`);
}
for (const [key, means] of tally.means()) console.log(`${key}: ${means} dB (2 s windows of the next reply)`);
