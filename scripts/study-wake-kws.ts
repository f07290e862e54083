/**
 * Scratch study (session 16): would pocketsphinx's keyword spotter for "hey jarvis", with the
 * look's fit (wake-check.ts, `-cmn current` window, fit ≤ 9), hear the wake words openWakeWord
 * misses (flite slt above all)? Rooms of bench-room (the canceller where IRIS plays), each hit
 * inside the person's phrase (+0.5 s) a positive, any other a negative; then continuous reading.
 * Writes STUDY_OUT (default /tmp/wake-kws.json).
 */
import { writeFileSync } from 'node:fs';
import { SPEECH_FORMAT } from '../src/pipeline/audio.js';
import { loadLibrary } from '../src/pipeline/pocketsphinx-binding.js';
import { DEFAULT_DICTIONARY, DEFAULT_MODEL, dictionaryEntries, withDictionary } from '../src/pipeline/pocketsphinx-model.js';
import { PhraseCheck } from '../src/pipeline/wake-check.js';
import { createOpenWakeWord } from '../src/pipeline/wakeword.js';
import { round } from './lib/bench.js';
import { roomBenchOptions } from './lib/room-bench/options.js';
import { cancelledCommandRooms, readingSources } from './lib/room-bench/study.js';
import { RATE, type Part } from './lib/room-bench/room.js';

const options = roomBenchOptions(process.argv, process.env);
const part = (process.env.STUDY_PART ?? 'dev') as Part;
const thresholds = (process.env.STUDY_KWS ?? '1e-20,1e-30,1e-40').split(',').map(Number);
const negMin = Number(process.env.STUDY_NEG_MIN ?? 30);
const lib = await loadLibrary('libpocketsphinx.so.3');
const entries = dictionaryEntries(DEFAULT_DICTIONARY, new Set(['hey', 'jarvis']));
const decoders = thresholds.map((t) => withDictionary(entries, (dict) => lib.init(['-hmm', DEFAULT_MODEL, '-dict', dict, '-keyphrase', 'hey jarvis', '-kws_threshold', String(t), '-kws_delay', '5', '-logfn', '/dev/null'])));
const check = await PhraseCheck.create('hey jarvis', 'window');
const wake = await createOpenWakeWord({ model: 'hey_jarvis', threshold: 0, check: false });

/** Every hit (end, seconds) of each spotter over `samples`, restarting every 2 s with 0.6 s fed again (as the stop word's spotter). */
function hits(samples: Int16Array): number[][] {
  return decoders.map((d) => {
    const found: number[] = [];
    let since = 0;
    lib.startUtt(d);
    for (let at = 0; at + 1280 <= samples.length; at += 1280) {
      lib.processRaw(d, samples.subarray(at, at + 1280));
      since += 1280;
      if (lib.hyp(d) !== null) {
        found.push((at + 1280) / RATE);
        lib.endUtt(d);
        lib.startUtt(d);
        since = 0;
      } else if (since >= 2 * RATE) {
        lib.endUtt(d);
        lib.startUtt(d);
        lib.processRaw(d, samples.subarray(Math.max(0, at + 1280 - 0.6 * RATE), at + 1280));
        since = 0;
      }
    }
    lib.endUtt(d);
    return found;
  });
}
const fitAt = (samples: Int16Array, atS: number) => round(check.fit(samples.subarray(Math.max(0, Math.round((atS - 2.2) * RATE)), Math.min(samples.length, Math.round((atS + 0.1) * RATE)))), 1);
async function bestScore(samples: Int16Array, fromS: number, toS: number): Promise<number> {
  wake.reset();
  let best = 0;
  for (let at = 0; at + 1280 <= samples.length; at += 1280) {
    const d = await wake.process({ ...SPEECH_FORMAT, samples: samples.subarray(at, at + 1280), atS: at / RATE });
    const t = (at + 1280) / RATE;
    if (t > fromS && t < toS + 0.5) best = Math.max(best, d?.score ?? 0);
  }
  return best;
}

const positives: object[] = [];
const negatives: object[] = [];
for await (const { condition, voice, command, heard, personS: [fromS, toS] } of cancelledCommandRooms(options, part)) {
  const score = round(await bestScore(heard, fromS, toS), 3);
  const found = hits(heard);
  const row: Record<string, unknown> = { condition: condition.name, voice: voice.name, command, score, iris: condition.esrDb !== undefined };
  thresholds.forEach((t, k) => {
    const mine = (found[k] ?? []).filter((h) => h > fromS && h < toS + 0.5);
    row[`k${t}`] = mine.length ? fitAt(heard, mine[0]!) : null;
    for (const h of (found[k] ?? []).filter((h) => !(h > fromS && h < toS + 0.5))) negatives.push({ source: `room ${condition.name}`, iris: condition.esrDb !== undefined, threshold: t, fit: fitAt(heard, h) });
  });
  positives.push(row);
  process.stderr.write(`${JSON.stringify(row)}\n`);
}
// Continuous reading (LibriVox at two tempos; flite and festival reading licences).
let total = 0;
for (const source of readingSources(['0.9', '1.1'], ['0'])) {
  if (total >= negMin * 60) break;
  const samples = source.make();
  total += samples.length / RATE;
  hits(samples).forEach((found, k) => { for (const h of found) negatives.push({ source: 'reading', threshold: thresholds[k], fit: fitAt(samples, h) }); });
}
const summary = Object.fromEntries(thresholds.map((t) => {
  const key = `k${t}`;
  const pos = positives as Record<string, unknown>[];
  const missed = pos.filter((p) => (p.score as number) < 0.1);
  return [t, {
    found_fit9: pos.filter((p) => p[key] !== null && (p[key] as number) <= 9).length,
    missed_by_oww: missed.length,
    missed_found_fit9: missed.filter((p) => p[key] !== null && (p[key] as number) <= 9).length,
    negatives: negatives.filter((n) => (n as { threshold: number }).threshold === t).length,
    negatives_fit9_quiet: negatives.filter((n) => { const x = n as { threshold: number; fit: number; iris?: boolean }; return x.threshold === t && x.fit <= 9 && x.iris !== true; }).length,
    negatives_fit9_iris: negatives.filter((n) => { const x = n as { threshold: number; fit: number; iris?: boolean }; return x.threshold === t && x.fit <= 9 && x.iris === true; }).length,
  }];
}));
console.log(JSON.stringify({ part, reading_min: round(total / 60, 1), rooms: positives.length, summary }, null, 1));
writeFileSync(process.env.STUDY_OUT ?? '/tmp/wake-kws.json', JSON.stringify({ part, summary, positives, negatives }, null, 1));
