/**
 * Scratch study (session 14): would a second look by pocketsphinx ("hey jarvis" against a free
 * phone loop) tell openWakeWord's low-score detections of the person from its low-score peaks
 * over continuous speech? Positives: the person's peak in every command room of the dev part
 * (through the canceller where IRIS talks). Negatives: every peak ≥ 0.05 over continuous speech.
 * Writes /tmp/wake-verify-study.json.
 */
import { writeFileSync } from 'node:fs';
import { SPEECH_FORMAT } from '../src/pipeline/audio.js';
import { PhraseCheck } from '../src/pipeline/wake-check.js';
import { createOpenWakeWord } from '../src/pipeline/wakeword.js';
import { round } from './lib/bench.js';
import { roomBenchOptions } from './lib/room-bench/options.js';
import { cancelledCommandRooms, readingSources } from './lib/room-bench/study.js';
import { RATE, type Part } from './lib/room-bench/room.js';

const options = roomBenchOptions(process.argv, process.env);
const part = (process.env.STUDY_PART ?? 'dev') as Part;
const negMin = Number(process.env.STUDY_NEG_MIN ?? 20);
const wake = await createOpenWakeWord({ model: 'hey_jarvis', threshold: 0, check: false });
const checks: Record<string, PhraseCheck> = process.env.STUDY_CMN === 'window' ? { window: await PhraseCheck.create('hey jarvis', 'window') } : { stream: await PhraseCheck.create('hey jarvis', 'stream'), window: await PhraseCheck.create('hey jarvis', 'window') };
/** The windows tried: name, seconds before the peak, seconds after (STUDY_WINDOWS="2,0.3;1.2,0.3"). */
const WINDOWS = (process.env.STUDY_WINDOWS ?? '2,0.3;1.6,0.2').split(';').map((w) => { const [b = 2, a = 0.3] = w.split(',').map(Number); return [`w${Math.round(b * 10)}_${Math.round(a * 10)}`, b, a] as const; });
const negFloor = Number(process.env.STUDY_NEG_FLOOR ?? 0.05);
const only = process.env.STUDY_ONLY?.split(',');
/** The look's fit with each cepstral mean, for windows from `before` s before a peak at `atS` to `after` s past it. */
function verify(samples: Int16Array, atS: number) {
  const out: Record<string, number> = {};
  for (const [name, before, after] of WINDOWS) {
    const window = samples.subarray(Math.max(0, Math.round((atS - before) * RATE)), Math.min(samples.length, Math.round((atS + after) * RATE)));
    for (const [cmn, check] of Object.entries(checks)) out[`${name}_${cmn}`] = check.fit(window);
  }
  return out;
}
/** Every peak (local maximum over ±0.5 s) ≥ `min` of openWakeWord's score over `samples`. */
async function peaks(samples: Int16Array, min: number): Promise<{ score: number; atS: number }[]> {
  wake.reset();
  const scores: { score: number; atS: number }[] = [];
  for (let at = 0; at + 1280 <= samples.length; at += 1280) {
    const d = await wake.process({ ...SPEECH_FORMAT, samples: samples.subarray(at, at + 1280), atS: at / RATE });
    scores.push({ score: d?.score ?? 0, atS: (at + 1280) / RATE });
  }
  return scores.filter((s, i) => s.score >= min && scores.slice(Math.max(0, i - 6), i + 7).every((o) => o.score <= s.score) && scores.slice(Math.max(0, i - 6), i).every((o) => o.score < s.score));
}

const positives: object[] = [];
const negatives: object[] = [];
for await (const { condition, voice, command, heard, personS: [fromS, toS] } of cancelledCommandRooms(options, part, only)) {
  const all = await peaks(heard, 0.02);
  const mine = all.filter((p) => p.atS > fromS && p.atS < toS + 0.5).sort((a, b) => b.score - a.score)[0];
  if (mine) positives.push({ condition: condition.name, voice: voice.name, command, score: round(mine.score, 3), ...verify(heard, mine.atS) });
  else positives.push({ condition: condition.name, voice: voice.name, command, score: 0 });
  for (const p of all.filter((p) => p.atS < fromS && p.score >= negFloor)) negatives.push({ source: `room ${condition.name}`, score: round(p.score, 3), ...verify(heard, p.atS) });
  process.stderr.write(`${condition.name} ${voice.name} ${command}: ${mine ? round(mine.score, 2) : 0}\n`);
}
// Continuous speech: LibriVox at three tempos and pitches, then flite and festival reading licences.
let total = 0;
for (const source of readingSources(['0.9', '1', '1.1'], ['-200', '0', '200'])) {
  if (total >= negMin * 60) break;
  const samples = source.make();
  total += samples.length / RATE;
  for (const p of await peaks(samples, negFloor)) negatives.push({ source: source.name, score: round(p.score, 3), ...verify(samples, p.atS) });
  process.stderr.write(`${source.name}: ${round(total / 60, 1)} min, ${negatives.length} negatives\n`);
}
writeFileSync(process.env.STUDY_OUT ?? '/tmp/wake-verify-study.json', JSON.stringify({ part, minutes: round(total / 60, 1), positives, negatives }, null, 1));
