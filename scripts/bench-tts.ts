/**
 * Benchmark of the Piper path (src/pipeline/piper.ts), one thread: preparing a 20-word sentence
 * (text for the ear, libespeak-ng phonemes, ids; p50 per sentence), and synthesis time and
 * real-time factor with a generated voice of a medium voice's weight (~60 MB, 24 MatMul layers;
 * test/fixtures/make-piper-voice.py heavy, python3-onnx) — and espeak-ng's time for the same
 * sentence beside it. What the generated model can tell: the cost of moving ~60 MB of weights
 * through onnxruntime per phoneme block; what it cannot: a real VITS voice's speed (its
 * convolutions, flows and decoder upsampling differ) or how it sounds. Writes
 * scripts/results/tts.json. Run: `taskset -c 0 npx tsx scripts/bench-tts.ts` (part of npm run bench).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { forTheEar } from '../src/pipeline/ear.js';
import { createEspeak } from '../src/pipeline/espeak.js';
import { phonemize } from '../src/pipeline/phonemes.js';
import { createPiper, phonemeIds } from '../src/pipeline/piper.js';
import { wavInfo } from '../src/pipeline/wav.js';
import { ROOT, round, timeMs, writeResults } from './lib/bench.js';

const SENTENCE = 'The train to Berlin leaves at 15:05 from platform 3, and a ticket costs $29.50 if you book it today online.';
const dir = mkdtempSync(join(tmpdir(), 'iris-bench-tts-'));
try {
  const model = join(dir, 'heavy.onnx');
  execFileSync('/usr/bin/python3', [join(ROOT, 'test/fixtures/make-piper-voice.py'), model, '1', 'heavy'], { stdio: 'ignore' });
  const map = (JSON.parse(readFileSync(`${model}.json`, 'utf8')) as { phoneme_id_map: Record<string, number[]> }).phoneme_id_map;
  const words = SENTENCE.split(/\s+/).length;

  const prepare = await timeMs(200, async () => (await phonemize(forTheEar(SENTENCE), 'en-us')).map((s) => phonemeIds(s, map)), 20);
  const ids = (await phonemize(forTheEar(SENTENCE), 'en-us')).reduce((n, s) => n + phonemeIds(s, map).length, 0);

  const piper = await createPiper({ model, threads: 1 });
  const wav = await piper.synthesize(SENTENCE);
  const { rate, dataBytes } = wavInfo(wav);
  const audioS = dataBytes / 2 / rate;
  const synth = await timeMs(10, () => piper.synthesize(SENTENCE), 2);
  const espeak = createEspeak({ voice: 'en-us', rateWpm: 175 });
  const espeakMs = await timeMs(20, () => espeak.synthesize(forTheEar(SENTENCE)), 3);

  const figures = {
    sentence: SENTENCE,
    words,
    phoneme_ids: ids,
    prepare_ms_p50: prepare.p50,
    generated_voice: { mbytes: round(readFileSync(model).length / 1e6, 1), layers: 24, threads: 1 },
    synthesize_ms_p50: synth.p50,
    audio_s: round(audioS, 2),
    real_time_factor: round(synth.p50 / 1000 / audioS, 3),
    espeak_ms_p50: espeakMs.p50,
  };
  console.log(`prepare a ${words}-word sentence (ear + phonemes + ${ids} ids): ${prepare.p50} ms p50`);
  console.log(`synthesise with a generated ${figures.generated_voice.mbytes} MB voice, 1 thread: ${synth.p50} ms p50 for ${figures.audio_s} s of audio (RTF ${figures.real_time_factor}); espeak-ng: ${espeakMs.p50} ms`);
  writeResults('tts', figures);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
