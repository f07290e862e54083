/**
 * Study (session 17): how much of IRIS's echo the canceller leaves after it has heard IRIS for
 * longer than one reply, by filter length. The daemon keeps its canceller all day (one per voice
 * start); bench-room's rooms give it one earlier reply (~8 s). IRIS alone, several replies in a
 * row in one room (the bench's delay, reverb, level): ERLE over each 8 s stretch where IRIS sounds.
 * Run: OMP_NUM_THREADS=1 taskset -c 0 npx tsx scripts/study-erle-warm.ts [filterMs ...]
 */
import { meanPower } from '../src/pipeline/audio.js';
import { random } from './lib/bench.js';
import { roomBenchOptions } from './lib/room-bench/options.js';
import { CONDITIONS, REPLIES, RATE, drawsOf, referenceOf, room } from './lib/room-bench/room.js';

const filters = process.argv.slice(2).map(Number);
const rand = random(17);
const rooms = 4;
const names = (process.env.STUDY_CONDITIONS ?? 'echo 0 dB,echo +6 dB,echo 0 dB RT60 0.6').split(',');
const stretchS = 8;
for (const name of names) {
  const base = CONDITIONS.find((c) => c.name === name);
  if (!base) throw new Error(name);
  for (let k = 0; k < rooms; k++) {
    const draws = drawsOf(rand);
    const order = [0, 1, 2, 3].map((i) => REPLIES[(draws.pick + i) % REPLIES.length] ?? '');
    const earlier = [...order, ...order].join(' ');
    const r = room({ ...base, says: 'nothing', irisSays: [earlier, order[0] ?? ''] }, 'dev', undefined, draws);
    const row: string[] = [];
    for (const filterMs of filters.length ? filters : [384]) {
      const options = roomBenchOptions(['node', 'x'], { ...process.env, IRIS_BENCH_FILTER_MS: String(filterMs) });
      const canceller = await options.makeCanceller(referenceOf(r.played));
      const out = new Int16Array(r.mic.length);
      for (let at = 0; at + 1280 <= r.mic.length; at += 1280) out.set(canceller.process(r.mic.subarray(at, at + 1280), at), at);
      canceller.destroy();
      const erles: string[] = [];
      const step = stretchS * RATE;
      for (let at = 0; at + step <= r.mic.length; at += step) {
        // Only where IRIS's echo sounds: 80 ms chunks whose reference is over 1 % of its mean power.
        let mic = 0;
        let res = 0;
        const refMean = meanPower(r.played);
        for (let c = at; c < at + step; c += 1280) {
          if (meanPower(r.played.subarray(c, c + 1280)) < refMean / 100) continue;
          mic += meanPower(r.mic.subarray(c, c + 1280));
          res += meanPower(out.subarray(c, c + 1280));
        }
        erles.push(res > 0 ? (10 * Math.log10(mic / res)).toFixed(1) : '-');
      }
      row.push(`${filterMs} ms: ${erles.join(' ')}`);
    }
    console.log(`${name} room ${k} (delay ${draws.delayMs} ms, ${(r.mic.length / RATE).toFixed(0)} s) | ${row.join(' | ')}`);
  }
}
