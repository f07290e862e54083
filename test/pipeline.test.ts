/**
 * The pipeline started and ended at every stage, on the engines IRIS chooses (engines.ts: real
 * openWakeWord, pocketsphinx and espeak-ng): each run passes exactly the stages between its
 * start and its end, and gives what its end stage makes — a detection, words, an answer, or
 * speech. Then the shapes that are refused, words not caught, a voice loop whose runs end
 * early, and the one place that chooses the engines.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../src/config/load.js';
import { createLogger } from '../src/log.js';
import { samplesSource } from '../src/pipeline/capture.js';
import { Engines } from '../src/pipeline/engines.js';
import type { VoiceEventType } from '../src/pipeline/events.js';
import { CollectingSink } from '../src/pipeline/playback.js';
import { PipelineError, runPipeline, STAGES, type PipelineStage, type ReplyStream, type RunInput } from '../src/pipeline/pipeline.js';
import { VoiceLoop } from '../src/pipeline/voice.js';
import { createVoiceParts, loopOptions } from '../src/daemon/voice.js';
import { commandSamples, soxStat } from './helpers/speech.js';
import { tempDir } from './helpers/tmp.js';

const log = createLogger('test', { write: () => undefined });
const config = parseConfig('[stt]\nengine = "pocketsphinx"\n[assistant]\nfollow_up_s = 0\n', 'test');
const engines = new Engines(() => config, log);
afterAll(() => engines.stop());

/** A conversation that answers every question the same, recording what it was asked and how. */
function answering(reply: string) {
  const asked: { text: string; heard: unknown }[] = [];
  const respond = (text: string, _signal: AbortSignal, heard: unknown): ReplyStream<{ reply: string }> => {
    asked.push({ text, heard });
    return { sentences: (async function* () { await Promise.resolve(); yield reply; })(), result: Promise.resolve({ reply }) };
  };
  return { asked, respond };
}

const withWake = commandSamples('hey jarvis, what time is it', { padS: [0.3, 0.6] });
const command = commandSamples('what time is it', { padS: [0.2, 0.4] });

function inputFor(start: PipelineStage): RunInput {
  if (start === 'wake') return { audio: samplesSource(withWake) };
  if (start === 'stt') return { samples: command };
  if (start === 'conversation') return { text: 'what time is it' };
  return { text: 'It is noon.' };
}

describe('the pipeline from any stage to any stage', () => {
  const runs = STAGES.flatMap((start, i) => STAGES.slice(i).map((end) => [start, end] as const));

  it.each(runs)('%s → %s passes exactly the stages between, and gives what its end makes', async (start, end) => {
    const sink = new CollectingSink();
    const { asked, respond } = answering('It is noon.');
    const events: VoiceEventType[] = [];
    const { engine: stt } = engines.stt();
    const result = await runPipeline(inputFor(start), {
      start, end, signal: new AbortController().signal,
      wake: await engines.wake(), stt, respond, tts: engines.tts(), sink,
      minConfidence: config.stt.min_confidence,
      emit: (type) => events.push(type),
    });
    const from = STAGES.indexOf(start);
    const to = STAGES.indexOf(end);
    const ran = STAGES.filter((s) => events.includes(`${s}-start`) || (s === 'wake' && events.includes('wake-end')));
    expect(ran).toEqual(STAGES.slice(from, to + 1));
    expect(result.outcome).toBe('answered');
    // What the end stage makes, and nothing past it.
    if (start === 'wake') expect(result.wake?.word).toBe('hey_jarvis');
    if (from <= 1 && to >= 1) expect(result.transcript).toBe('what time is it');
    expect(asked.map((a) => a.text)).toEqual(from <= 2 && to >= 2 ? ['what time is it'] : []);
    if (to === 2) expect(result.reply).toBe('It is noon.');
    expect(sink.clips > 0).toBe(end === 'tts');
    if (end === 'tts') {
      const wav = join(tempDir(), 'said.wav');
      writeFileSync(wav, sink.wav());
      expect(soxStat(wav).rms).toBeGreaterThan(0.01); // speech, not silence
    }
  }, 30_000);

  it('hands the conversation how the words came: heard with the recogniser\'s confidence, or as the caller says', async () => {
    const { asked, respond } = answering('Fine.');
    const { engine: stt } = engines.stt();
    const signal = new AbortController().signal;
    await runPipeline({ samples: command }, { start: 'stt', end: 'conversation', stt, respond, signal });
    await runPipeline({ text: 'cancel all timers' }, { start: 'conversation', end: 'conversation', respond, heard: { heard: true }, signal });
    await runPipeline({ text: 'cancel all timers' }, { start: 'conversation', end: 'conversation', respond, signal });
    expect(asked[0]?.heard).toEqual({ confidence: expect.any(Number) as number });
    expect(asked[1]?.heard).toEqual({ heard: true });
    expect(asked[2]?.heard).toEqual({}); // typed
  }, 30_000);

  it('refuses a run that ends before it starts, lacks an engine, or is given the wrong input — before doing anything', async () => {
    const signal = new AbortController().signal;
    const { respond, asked } = answering('no');
    const fails = (input: RunInput, start: PipelineStage, end: PipelineStage, extra = {}) => runPipeline(input, { start, end, signal, respond, ...extra });
    await expect(fails({ text: 'hi' }, 'tts', 'conversation')).rejects.toMatchObject({ code: 'pipeline_stages' });
    await expect(fails({ audio: samplesSource(withWake) }, 'wake', 'wake')).rejects.toMatchObject({ code: 'pipeline_engine' });
    await expect(fails({ text: 'hi' }, 'stt', 'stt', { stt: engines.stt().engine })).rejects.toMatchObject({ code: 'pipeline_input' });
    await expect(fails({ text: 'hi' }, 'wake', 'tts', { wake: await engines.wake() })).rejects.toBeInstanceOf(PipelineError);
    expect(asked).toEqual([]);
  });

  it('words not caught act on nothing: a run ending at stt says nothing; one ending at tts says it did not catch them', async () => {
    const silence = new Int16Array(16_000);
    const { asked, respond } = answering('never');
    const { engine: stt } = engines.stt();
    const options = { stt, respond, tts: engines.tts(), signal: new AbortController().signal, minConfidence: config.stt.min_confidence };
    const quiet = new CollectingSink();
    const words = await runPipeline({ samples: silence }, { ...options, start: 'stt', end: 'stt', sink: quiet });
    expect(words).toMatchObject({ outcome: 'not_understood', transcript: '' });
    expect(quiet.clips).toBe(0);
    const spoken = new CollectingSink();
    const reply = await runPipeline({ samples: silence }, { ...options, start: 'stt', end: 'tts', sink: spoken });
    expect(reply).toMatchObject({ outcome: 'not_understood', said: "Sorry, I didn't catch that." });
    expect(spoken.clips).toBe(1);
    expect(asked).toEqual([]);
  }, 30_000);

  it('audio without the wake word ends a wake run with no_wake, and nothing after it runs', async () => {
    const events: VoiceEventType[] = [];
    const result = await runPipeline({ audio: samplesSource(command) }, { start: 'wake', end: 'tts', wake: await engines.wake(), signal: new AbortController().signal, emit: (t) => events.push(t) });
    expect(result.outcome).toBe('no_wake');
    expect(events).toEqual(['wake-start']);
  });
});

describe('a voice loop whose runs end early', () => {
  it.each([
    ['stt', { transcript: 'what time is it', asked: 0, spoken: false }],
    ['conversation', { transcript: 'what time is it', asked: 1, spoken: false }],
    ['tts', { transcript: 'what time is it', asked: 1, spoken: true }],
  ] as const)('ending at %s', async (end, want) => {
    const parts = await createVoiceParts(engines);
    await parts.sttStarted;
    const sink = new CollectingSink();
    const { asked, respond } = answering('It is noon.');
    const loop = new VoiceLoop({ ...loopOptions(config, parts, sink, respond), end });
    const [run] = await loop.run(samplesSource(withWake), new AbortController().signal, true);
    expect(run).toMatchObject({ outcome: 'answered', transcript: want.transcript });
    expect(asked.length).toBe(want.asked);
    expect(sink.clips > 0).toBe(want.spoken);
  }, 30_000);

  it('ending at the wake word reports the detection and takes no command', async () => {
    const parts = await createVoiceParts(engines);
    const sink = new CollectingSink();
    const { asked, respond } = answering('never');
    const loop = new VoiceLoop({ ...loopOptions(config, parts, sink, respond), end: 'wake' });
    const [run] = await loop.run(samplesSource(withWake), new AbortController().signal, true);
    expect(run?.outcome).toBe('answered');
    expect(run?.wake?.word).toBe('hey_jarvis');
    expect(run?.transcript).toBeUndefined();
    expect(asked).toEqual([]);
    expect(sink.clips).toBe(0);
  }, 30_000);
});

describe('the one place that chooses engines', () => {
  it('shares the recogniser and the voice across runs, and remakes each only when its settings change', async () => {
    let current = parseConfig('[stt]\nengine = "pocketsphinx"\n', 'c');
    const own = new Engines(() => current, log);
    try {
      const [stt, tts] = [own.stt(), own.tts()];
      expect(own.stt()).toBe(stt);
      expect(own.tts()).toBe(tts);
      expect(stt.reason).toBe('pocketsphinx, as configured');
      current = { ...current, tts: { ...current.tts, rate_wpm: current.tts.rate_wpm + 20 } };
      expect(own.tts()).not.toBe(tts);
      expect(own.stt()).toBe(stt); // the voice changed, not the recogniser
      current = { ...current, assistant: { ...current.assistant, wake_word: 'alexa' } };
      expect(own.stt()).not.toBe(stt); // its grammar holds the wake phrase
      // Each stream gets its own wake-word detector (its audio state), on the configured model.
      const [a, b] = await Promise.all([own.wake(), own.wake()]);
      expect(a).not.toBe(b);
      expect(a.word).toBe('alexa');
    } finally {
      await own.stop();
    }
  });

  it('keeps no replaced recogniser: after 10 changes of [stt] one is left (each reload used to keep every one before it)', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    let current = parseConfig('[stt]\nengine = "pocketsphinx"\n', 'c');
    const own = new Engines(() => current, log);
    const made: WeakRef<object>[] = [];
    try {
      for (let i = 1; i <= 10; i++) {
        current = { ...current, stt: { ...current.stt, threads: 1 + (i % 2) } }; // a reload with another [stt]
        const chosen = own.stt();
        made.push(new WeakRef(chosen.engine));
        await chosen.started;
      }
      const live = async (): Promise<number> => {
        await new Promise<void>((resolve) => setImmediate(resolve)); // a WeakRef holds its target until the job that made it ends
        gc();
        return made.filter((ref) => ref.deref() !== undefined).length;
      };
      await expect.poll(live).toBe(1); // the replaced ones are stopped, then unreachable
    } finally {
      await own.stop();
    }
  });
});
