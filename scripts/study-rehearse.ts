/**
 * Study (session 18; docs/room.md, "The young canceller's rehearsal"): does a long filter that hears
 * IRIS's first reply again (K passes) cancel more in the next reply? speexdsp alone, the reference
 * aligned at the true delay (PASSES=1,2,3,5); or the whole canceller with each IRIS_BENCH_REHEARSAL
 * setting (ARMS='off;{}'). ERLE over 2 s windows of the first and the second reply, dev rooms; with ARMS,
 * each arm's canceller CPU per second of audio too; PRIMED=1: each canceller started from the room
 * learned over the same two replies heard twice (the daemon started again there, echo-memory.ts).
 * Run: OMP_NUM_THREADS=1 taskset -c 0 npx tsx scripts/study-rehearse.ts
 */
import { concatSamples, meanPower } from '../src/pipeline/audio.js';
import { SpeexEcho } from '../src/pipeline/speexdsp.js';
import { random } from './lib/bench.js';
import { roomBenchOptions } from './lib/room-bench/options.js';
import { CONDITIONS, RATE, referenceOf } from './lib/room-bench/room.js';
import { twoRepliesRoom } from './lib/room-bench/study.js';
import { learnedOver } from './lib/room-bench/front-end.js';

const rand = random(Number(process.env.SEED ?? 18));
const rooms = Number(process.env.ROOMS ?? 4);
const names = (process.env.STUDY_CONDITIONS ?? 'echo 0 dB,echo +6 dB,echo +12 dB,echo 0 dB RT60 0.6').split(',');
const passes = (process.env.PASSES ?? '1,2,3,5').split(',').map(Number);
/** ARMS='off;{}' : the whole canceller (delay estimate, warm filter, clip model) with each IRIS_BENCH_REHEARSAL value, instead of speexdsp alone. */
const arms = process.env.ARMS?.split(';');
const F = 256;
const winS = 2;
const sums = new Map<string, number[]>();
/** Each arm's canceller CPU (s) and the audio it heard (s), the arms run in turn on each room (so a busy machine weighs on each alike). */
const cpu = new Map<string, [number, number]>();
/** PRIMED=1 (with ARMS): each arm's canceller starts from a room learned there before (echo-memory.ts); `startCpu`: its creation's CPU (the priming), s. */
const primed = process.env.PRIMED === '1';
const startCpu = new Map<string, number>();
const twice = (a: Int16Array) => concatSamples([a, a]);
for (const name of names) {
  const base = CONDITIONS.find((c) => c.name === name);
  if (!base) throw new Error(name);
  for (let k = 0; k < rooms; k++) {
    const { r, ref, cut } = twoRepliesRoom(base, rand, F);
    const row: string[] = [];
    const erleOf = (out: Int16Array, from: number): number[] => {
      const erles: number[] = [];
      const refMean = meanPower(ref);
      for (let w = 0; w < 4; w++) {
        let mic = 0;
        let res = 0;
        for (let c = from + w * winS * RATE; c < from + (w + 1) * winS * RATE && c + 1280 <= r.mic.length; c += 1280) {
          if (meanPower(ref.subarray(c, c + 1280)) < refMean / 100) continue;
          mic += meanPower(r.mic.subarray(c, c + 1280));
          res += meanPower(out.subarray(c, c + 1280));
        }
        erles.push(res > 0 ? 10 * Math.log10(mic / res) : NaN);
      }
      return erles;
    };
    const add = (key: string, erles: number[]) => {
      const s = sums.get(key) ?? [0, 0, 0, 0, 0, 0, 0, 0, 0];
      erles.forEach((e, i) => (s[i] = (s[i] ?? 0) + e));
      s[8] = (s[8] ?? 0) + 1;
      sums.set(key, s);
      row.push(`${key.slice(name.length + 1)}: ${erles.map((e) => e.toFixed(1)).join(' ')}`);
    };
    // PRIMED=1: the daemon started again in this room, its canceller from what one learned over the same two replies heard twice.
    const remembered = arms && primed ? await learnedOver(roomBenchOptions(['node', 'x'], process.env), twice(r.mic), twice(r.played)) : undefined;
    for (const arm of arms ?? []) {
      const options = roomBenchOptions(['node', 'x'], { ...process.env, IRIS_BENCH_REHEARSAL: arm });
      const starting = process.cpuUsage();
      const canceller = await options.makeCanceller(referenceOf(r.played), remembered ? { remembered } : {});
      const started = process.cpuUsage(starting);
      startCpu.set(arm, (startCpu.get(arm) ?? 0) + (started.user + started.system) / 1e6);
      const out = new Int16Array(r.mic.length);
      const before = process.cpuUsage();
      for (let at = 0; at + 1280 <= r.mic.length; at += 1280) out.set(canceller.process(r.mic.subarray(at, at + 1280), at), at);
      const used = process.cpuUsage(before);
      const cost = cpu.get(arm) ?? [0, 0];
      cpu.set(arm, [(cost[0] ?? 0) + (used.user + used.system) / 1e6, (cost[1] ?? 0) + r.mic.length / RATE]);
      const stats = canceller.stats;
      canceller.destroy();
      add(`${name} ${arm}`, [...erleOf(out, 0), ...erleOf(out, cut)]);
      if (stats.rehearsals) row.push(`(${JSON.stringify(stats.rehearsals)})`);
    }
    for (const K of arms ? [] : passes) {
      const echo = await SpeexEcho.create({ frameSamples: F, filterSamples: 6144, rate: RATE, echoSuppressDb: 0, echoSuppressActiveDb: -15, noiseSuppressDb: 0 });
      const zero = new Int16Array(F);
      for (let p = 1; p < K; p++) {
        for (let at = 0; at + F <= cut; at += F) echo.process(r.mic.subarray(at, at + F), ref.subarray(at, at + F));
        for (let z = 0; z < 30; z++) echo.process(zero, zero);
      }
      const out = new Int16Array(r.mic.length);
      for (let at = 0; at + F <= r.mic.length; at += F) out.set(echo.process(r.mic.subarray(at, at + F), ref.subarray(at, at + F)), at);
      echo.destroy();
      add(`${name} K=${K}`, [...erleOf(out, 0), ...erleOf(out, cut)]);
    }
    console.log(`${name} room ${k} first ${(cut / RATE).toFixed(1)} s | ${row.join(' | ')}`);
  }
}
for (const [arm, [cpuS, audioS]] of cpu) console.log(`${arm}: the canceller ${(cpuS / audioS).toFixed(4)} s of CPU per s of audio (${audioS.toFixed(0)} s of rooms, each ~${(audioS / rooms / names.length).toFixed(0)} s from IRIS's first word)${primed ? `; its start (the priming) ${((startCpu.get(arm) ?? 0) / rooms / names.length).toFixed(2)} s each` : ''}`);
for (const [key, s] of sums) {
  const mean = s.slice(0, 8).map((v) => (v / (s[8] ?? 1)).toFixed(1));
  console.log(`${key}: first reply ${mean.slice(0, 4).join(' / ')} · second ${mean.slice(4).join(' / ')} dB (2 s windows)`);
}
