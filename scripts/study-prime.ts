/**
 * Study (session 20; docs/room.md, "A room remembered across restarts"): does a filter trained on
 * noise through the impulse response an earlier run's filter had learned cancel IRIS's first reply
 * after a start as the earlier filter would? speexdsp alone, the reference at the true delay.
 * Arms on the second reply: the earlier filter going on (no restart), a fresh one, ones primed on
 * TRAIN_S seconds of noise heard PASSES times (SPEECH=1: IRIS's first reply instead of noise), and
 * the response alone subtracted. TEACHER=K: the earlier filter heard the first reply K times (a
 * filter that had heard more, as the daemon's after its rehearsal).
 * Run: TEACHER=4 PASSES=8 OMP_NUM_THREADS=1 taskset -c 0 npx tsx scripts/study-prime.ts
 */
import { convolve } from '../src/pipeline/echo-memory.js';
import { SpeexEcho } from '../src/pipeline/speexdsp.js';
import { random } from './lib/bench.js';
import { RATE } from './lib/room-bench/room.js';
import { ArmTally, twoRepliesRooms } from './lib/room-bench/study.js';

const rand = random(Number(process.env.SEED ?? 20));
const rooms = Number(process.env.ROOMS ?? 4);
const names = (process.env.STUDY_CONDITIONS ?? 'echo 0 dB,echo +12 dB,echo 0 dB RT60 0.6').split(',');
const trainS = (process.env.TRAIN_S ?? '2,4,8').split(',').map(Number);
const F = 256;
const settings = { frameSamples: F, filterSamples: 6144, rate: RATE, echoSuppressDb: 0, echoSuppressActiveDb: -15, noiseSuppressDb: 0 };
const tally = new ArmTally();

/** White noise (AMP, default 1000) or IRIS's own first reply (SPEECH=1) through `taps`: what a primed filter hears. */
function noiseThrough(taps: Float32Array, seconds: number, speech?: Int16Array): { mic: Int16Array; ref: Int16Array } {
  const ref = speech ?? Int16Array.from({ length: Math.round(seconds * RATE) }, () => Math.round((rand() * 2 - 1) * Number(process.env.AMP ?? 1000)));
  return { mic: convolve(ref, taps), ref };
}

for (const { name, k, r, ref, cut, erles } of twoRepliesRooms(names, rooms, rand, F)) {
  const row: string[] = [];
  const run = (echo: SpeexEcho, from: number): Int16Array => {
    const out = new Int16Array(r.mic.length);
    for (let at = from; at + F <= r.mic.length; at += F) out.set(echo.process(r.mic.subarray(at, at + F), ref.subarray(at, at + F)), at);
    return out;
  };

  const add = (arm: string, e: number[]) => tally.add(`${name} ${arm}`, arm, e, row);
  // The earlier run: its filter hears the first reply, then (no restart) goes on.
  const teacher = await SpeexEcho.create(settings);
  const zero = new Int16Array(F);
  for (let pass = 0; pass < Number(process.env.TEACHER ?? 1); pass++) {
    for (let at = 0; at + F <= cut; at += F) teacher.process(r.mic.subarray(at, at + F), ref.subarray(at, at + F));
    if (pass + 1 < Number(process.env.TEACHER ?? 1)) for (let z = 0; z < 32; z++) teacher.process(zero, zero);
  }
  const taps = teacher.impulseResponse();
  // The response as read, taken from the microphone as it is (no adaptive filter): how well it describes the room.
  const fixed = convolve(ref, taps);
  add('response alone', erles(Int16Array.from(r.mic, (v, i) => Math.max(-32768, Math.min(32767, v - (fixed[i] ?? 0))))));
  add('going on', erles(run(teacher, cut)));
  teacher.destroy();
  const fresh = await SpeexEcho.create(settings);
  add('fresh', erles(run(fresh, cut)));
  fresh.destroy();
  for (const s of trainS) {
    const primed = await SpeexEcho.create(settings);
    const t0 = process.cpuUsage();
    const noise = noiseThrough(taps, s, process.env.SPEECH ? ref.subarray(0, Math.min(cut, s * RATE)) : undefined);
    for (let pass = 0; pass < Number(process.env.PASSES ?? 1); pass++) for (let at = 0; at + F <= noise.mic.length; at += F) primed.process(noise.mic.subarray(at, at + F), noise.ref.subarray(at, at + F));
    const used = process.cpuUsage(t0);
    add(`primed ${s} s`, erles(run(primed, cut)));
    row.push(`(${((used.user + used.system) / 1e6).toFixed(2)} s CPU)`);
    primed.destroy();
  }
  console.log(`${name} room ${k} first reply ${(cut / RATE).toFixed(1)} s | ${row.join(' | ')}`);
}
for (const [key, means] of tally.means()) console.log(`${key}: ${means} dB (2 s windows of the reply after the start)`);
