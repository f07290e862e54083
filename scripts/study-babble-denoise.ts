/**
 * Scratch study (session 16): does openWakeWord hear the person better in babble on a copy
 * denoised by speexdsp's preprocessor? Dev rooms of bench-room (babble and controls), the person's
 * best score over their phrase per arm, and the look's fit where 0.1 ≤ score < 0.5.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SPEECH_FORMAT } from '../src/pipeline/audio.js';
import { SpeexEcho } from '../src/pipeline/speexdsp.js';
import { PhraseCheck } from '../src/pipeline/wake-check.js';
import { createOpenWakeWord } from '../src/pipeline/wakeword.js';
import { random, round } from './lib/bench.js';
import { CACHE, RATE, PEOPLE, COMMANDS, CONDITIONS, drawsOf, room, commandClip, type Part } from './lib/room-bench/room.js';

const part = (process.env.STUDY_PART ?? 'dev') as Part;
const arms = (process.env.STUDY_ARMS ?? '0,-10,-15,-25').split(',').map(Number);
const only = (process.env.STUDY_ONLY ?? 'quiet,babble 15 dB,babble 10 dB,RT60 0.6,babble 10 dB RT60 0.4').split(',');
const wake = await createOpenWakeWord({ model: 'hey_jarvis', threshold: 0, check: false });
const check = await PhraseCheck.create('hey jarvis', 'window');

(globalThis as { window?: unknown }).window = globalThis; // scratch: the package is built for browsers
const rnnoise = process.env.STUDY_RNNOISE ? await (await import(process.env.STUDY_RNNOISE) as { Rnnoise: { load(): Promise<{ createDenoiseState(): { processFrame(f: Float32Array): number; destroy(): void } }> } }).Rnnoise.load() : undefined;
function rnn(samples: Int16Array, mix: number): Int16Array {
  const up = raw(samples, 16000, 48000);
  const state = rnnoise!.createDenoiseState();
  const out = new Int16Array(up.length);
  const frame = new Float32Array(480);
  for (let at = 0; at + 480 <= up.length; at += 480) {
    for (let k = 0; k < 480; k++) frame[k] = up[at + k] ?? 0;
    state.processFrame(frame);
    for (let k = 0; k < 480; k++) out[at + k] = Math.max(-32768, Math.min(32767, Math.round(mix * (frame[k] ?? 0) + (1 - mix) * (up[at + k] ?? 0))));
  }
  state.destroy();
  return raw(out, 48000, 16000);
}
function raw(samples: Int16Array, from: number, to: number): Int16Array {
  const dir = join(CACHE, `soxraw-${process.pid}`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'in.raw'), samples);
  const f = (r: number) => ['-t', 'raw', '-r', String(r), '-e', 'signed', '-b', '16', '-c', '1'];
  execFileSync('sox', ['-D', ...f(from), join(dir, 'in.raw'), ...f(to), join(dir, 'out.raw')]);
  const b = readFileSync(join(dir, 'out.raw'));
  return new Int16Array(b.buffer, b.byteOffset, b.length >> 1).slice();
}
async function denoise(samples: Int16Array, db: number): Promise<Int16Array> {
  if (db === 0) return samples;
  if (db > 0) return rnn(samples, db / 100); // 100: RNNoise alone; 50: half mixed back
  const sp = await SpeexEcho.create({ frameSamples: 256, filterSamples: 1024, rate: RATE, echoSuppressDb: 0, echoSuppressActiveDb: 0, noiseSuppressDb: db });
  const out = new Int16Array(samples.length);
  const zero = new Int16Array(256);
  for (let at = 0; at + 256 <= samples.length; at += 256) out.set(sp.process(samples.subarray(at, at + 256), zero), at);
  sp.destroy();
  return out;
}
async function scores(samples: Int16Array): Promise<{ score: number; atS: number }[]> {
  wake.reset();
  const out: { score: number; atS: number }[] = [];
  for (let at = 0; at + 1280 <= samples.length; at += 1280) {
    const d = await wake.process({ ...SPEECH_FORMAT, samples: samples.subarray(at, at + 1280), atS: at / RATE });
    out.push({ score: d?.score ?? 0, atS: (at + 1280) / RATE });
  }
  return out;
}
const rows: object[] = [];
const rand = random(part === 'dev' ? 77 : 7077);
for (const condition of CONDITIONS) {
  for (const voice of PEOPLE[part]) {
    for (const command of COMMANDS[part]) {
      const draws = drawsOf(rand);
      if (condition.says !== 'command' || !only.includes(condition.name)) continue;
      const r = room(condition, part, commandClip(command, voice), draws);
      const [fromS, toS] = r.personS ?? [0, 0];
      const row: Record<string, unknown> = { condition: condition.name, voice: voice.name, command };
      for (const db of arms) {
        const heard = await denoise(r.mic, db);
        const all = await scores(heard);
        const mine = all.filter((p) => p.atS > fromS && p.atS < toS + 0.5).sort((a, b) => b.score - a.score)[0] ?? { score: 0, atS: 0 };
        const before = Math.max(0, ...all.filter((p) => p.atS < fromS).map((p) => p.score));
        const window = heard.subarray(Math.max(0, Math.round((mine.atS - 2) * RATE)), Math.min(heard.length, Math.round((mine.atS + 0.3) * RATE)));
        const fit = mine.score >= 0.02 ? round(check.fit(window), 1) : null;
        row[`s${db}`] = round(mine.score, 3);
        row[`f${db}`] = fit;
        row[`b${db}`] = round(before, 3);
      }
      rows.push(row);
      process.stderr.write(`${JSON.stringify(row)}\n`);
    }
  }
}
const summary: Record<string, Record<string, string>> = {};
for (const name of only) {
  const mine = rows.filter((r) => (r as { condition: string }).condition === name) as Record<string, number | null>[];
  summary[name] = Object.fromEntries(arms.map((db) => [db, `${mine.filter((r) => (r[`s${db}`] ?? 0) >= 0.5).length} plain, ${mine.filter((r) => (r[`s${db}`] ?? 0) >= 0.5 || ((r[`s${db}`] ?? 0) >= 0.1 && (r[`f${db}`] ?? 99) <= 9)).length} with look, of ${mine.length}`]));
}
console.log(JSON.stringify(summary, null, 1));
writeFileSync(process.env.STUDY_OUT ?? '/tmp/babble-denoise.json', JSON.stringify({ part, arms, summary, rows }, null, 1));
