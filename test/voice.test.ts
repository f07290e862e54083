/**
 * The voice loop on real models and real programs: a whole turn through the pipeline, the
 * reply streamed sentence by sentence, barge-in stopping a real aplay, follow-ups without
 * the wake word, and announcements that wait their turn.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { concatSamples, FRAME_SAMPLES, SPEECH_FORMAT, type AudioChunk, type AudioSink, type AudioSource } from '../src/pipeline/audio.js';
import { createEspeak } from '../src/pipeline/espeak.js';
import type { VoiceEvent } from '../src/pipeline/events.js';
import { Conversation, type TurnResult } from '../src/conversation/engine.js';
import { aplaySink, CollectingSink, earcon } from '../src/pipeline/playback.js';
import { createPocketsphinx } from '../src/pipeline/pocketsphinx.js';
import { createSileroVad, type VoiceActivity } from '../src/pipeline/vad.js';
import { stripWakeWord, VoiceLoop, type ReplyStream, type VoiceLoopOptions, type VoiceRun } from '../src/pipeline/voice.js';
import { silentLogger } from '../src/log.js';
import { nativeHost } from './helpers/tools.js';
import { tempDir } from './helpers/tmp.js';
import { createOpenWakeWord, type WakeWordDetector } from '../src/pipeline/wakeword.js';
import { virtualAudio } from './helpers/alsa.js';
import { withDouble } from './helpers/conversation.js';
import { parseConfig } from '../src/config/load.js';
import { sameMeaning } from '../src/intents/match.js';
import { RIVALS } from '../src/intents/sentences.js';
import { prefixState } from '../src/intents/prefix.js';
import { clipDir, commandSamples, speechSamples } from './helpers/speech.js';
import { makeClip } from '../scripts/lib/speech-set.js';
import { decodeWav } from '../src/pipeline/wav.js';
import { PushedAudio } from '../src/pipeline/capture.js';
import { readFileSync } from 'node:fs';

const silence = (seconds: number) => new Int16Array(Math.round(seconds * 16_000));

/** Frames of `parts` in order; a function part is awaited first (a gate: "go on after X"). */
function scriptedSource(parts: (Int16Array | (() => Promise<void>))[]): AudioSource {
  return {
    async *frames(signal) {
      let atSamples = 0;
      for (const part of parts) {
        if (typeof part === 'function') {
          await part();
          continue;
        }
        for (let i = 0; i < part.length && !signal.aborted; i += FRAME_SAMPLES) {
          const samples = new Int16Array(FRAME_SAMPLES);
          samples.set(part.subarray(i, i + FRAME_SAMPLES));
          yield { ...SPEECH_FORMAT, samples, atS: atSamples / 16_000 } satisfies AudioChunk;
          atSamples += FRAME_SAMPLES;
        }
      }
    },
  };
}

/** A reply that streams the given sentences, recording what it was asked. */
function replies(...sentences: string[]) {
  const asked: string[] = [];
  const respond = (text: string, signal: AbortSignal): ReplyStream<{ reply: string }> => {
    asked.push(text);
    const reply = sentences.join(' ');
    return {
      sentences: (async function* () {
        for (const sentence of sentences) {
          await new Promise(setImmediate); // streamed, as the model writes
          if (signal.aborted) return;
          yield sentence;
        }
      })(),
      result: Promise.resolve({ reply }),
    };
  };
  return { asked, respond };
}

/** Resolves on the `nth` event of `type` passed to `check`. */
function waitFor(type: VoiceEvent['type'], nth = 1): { promise: Promise<VoiceEvent>; check: (e: VoiceEvent) => void } {
  let resolve: (e: VoiceEvent) => void = () => undefined;
  let seen = 0;
  const promise = new Promise<VoiceEvent>((r) => (resolve = r));
  return { promise, check: (e) => void (e.type === type && ++seen === nth && resolve(e)) };
}

describe('the voice loop', () => {
  let wake: WakeWordDetector;
  let vad: VoiceActivity;
  const stt = createPocketsphinx({ wakePhrases: ['hey jarvis', 'jarvis'], agree: sameMeaning, rivals: RIVALS });
  const minConfidence = parseConfig('', 'test').stt.min_confidence;
  const tts = createEspeak({ voice: 'en-us', rateWpm: 175 });
  beforeAll(async () => {
    [wake, vad] = await Promise.all([createOpenWakeWord({ model: 'hey_jarvis' }), createSileroVad()]);
  });
  const base = <R>(sink: AudioSink, respond: VoiceLoopOptions<R>['respond']): VoiceLoopOptions<R> => ({ wake, vad, stt, tts, sink, respond, minConfidence });

  it('runs wake word → end of speech → STT → reply, and speaks every sentence in order', async () => {
    const sink = new CollectingSink();
    const { asked, respond } = replies('First sentence.', 'Second sentence.', 'Third.');
    const events: VoiceEvent[] = [];
    const loop = new VoiceLoop({ ...base(sink, respond), onEvent: (e) => events.push(e) });
    const [run] = await loop.run(scriptedSource([commandSamples('hey jarvis, what time is it in tokyo')]), new AbortController().signal, true);
    expect(run).toMatchObject({ outcome: 'answered', transcript: 'what time is it in tokyo', wake: { word: 'hey_jarvis' } });
    expect(asked).toEqual(['what time is it in tokyo']);
    expect(sink.clips).toBe(3);
    const order = events.map((e) => e.type);
    for (const [a, b] of [['wake-end', 'end_of_speech-end'], ['end_of_speech-end', 'stt-start'], ['stt-end', 'conversation-start'], ['first-audio', 'tts-end'], ['tts-end', 'run-end']]) {
      expect(order.indexOf(a as VoiceEvent['type'])).toBeLessThan(order.indexOf(b as VoiceEvent['type']));
    }
    expect(run!.timings.wake).toBeGreaterThan(900);
    expect(run!.timings.end_of_speech).toBeGreaterThan(run!.timings.wake);
    expect(run!.timings.stt).toBeGreaterThan(0);
    expect(run!.timings.total).toBeGreaterThanOrEqual(run!.timings.stt);
  });

  it('reports no wake word, and says so when the words are not understood', async () => {
    const quiet = await new VoiceLoop(base(new CollectingSink(), replies('x').respond)).run(scriptedSource([speechSamples('what time is it')]), new AbortController().signal, true);
    expect(quiet).toMatchObject([{ outcome: 'no_wake' }]);
    const sink = new CollectingSink();
    const { asked, respond } = replies('never');
    // Out-of-grammar speech: the grammar forces it into some command ("do it", a sum), and
    // the confidence must keep it from being acted on.
    const [run] = await new VoiceLoop(base(sink, respond)).run(scriptedSource([speechSamples('hey jarvis, play some jazz music', { padS: [0.5, 1.5] })]), new AbortController().signal, true);
    expect(run!.outcome).toBe('not_understood');
    expect(run!.confidence).toBeLessThan(minConfidence);
    expect(asked).toEqual([]);
    expect(sink.clips).toBe(1); // "Sorry, I didn't catch that."
  });

  it('hands the recogniser whole words: the command audio starts where the wake phrase does', async () => {
    // Said in one breath: the wake word fires after "jarvis", inside the command.
    const events: VoiceEvent[] = [];
    const { asked, respond } = replies('Done.');
    // A recogniser of its own: its cepstral mean must not depend on the tests before.
    const fresh = createPocketsphinx({ wakePhrases: ['hey jarvis', 'jarvis'], agree: sameMeaning, rivals: RIVALS });
    const loop = new VoiceLoop({ ...base(new CollectingSink(), respond), stt: fresh, onEvent: (e) => events.push(e) });
    const [run] = await loop.run(scriptedSource([commandSamples('hey jarvis, what time is it in tokyo')]), new AbortController().signal, true);
    expect(run!.outcome, JSON.stringify(events.find((e) => e.type === 'stt-end')?.data)).toBe('answered');
    expect(asked).toEqual(['what time is it in tokyo']);
    expect(events.find((e) => e.type === 'stt-end')?.data?.raw).toMatch(/^(?:hey )?jarvis what time is it in tokyo$/);
    // With a pause after the wake word, the command that follows is heard.
    const second = replies('Done.');
    const [paused] = await new VoiceLoop({ ...base(new CollectingSink(), second.respond), stt: fresh }).run(
      scriptedSource([commandSamples('hey jarvis', { padS: [0.5, 0.9] }), commandSamples('what time is it', { padS: [0, 1.5] })]),
      new AbortController().signal,
      true,
    );
    await fresh.stop?.();
    expect(paused!.outcome).toBe('answered');
    expect(second.asked).toEqual(['what time is it']);
  });

  it('ends the turn at a short pause when the words are a whole command, and never cuts one off', async () => {
    const ended = async (parts: Int16Array[]) => {
      const events: VoiceEvent[] = [];
      const { asked, respond } = replies('Done.');
      // Endpointing is under test here, not confidence: every transcript is acted on.
      const loop = new VoiceLoop({ ...base(new CollectingSink(), respond), minConfidence: 0, commandState: prefixState, onEvent: (e) => events.push(e) });
      await loop.run(scriptedSource(parts), new AbortController().signal, true);
      return { asked, end: events.find((e) => e.type === 'end_of_speech-end')?.data, settled: events.filter((e) => e.type.startsWith('settle-')).map((e) => e.type) };
    };
    // Nothing can follow "… to call mom": the turn ends at the short pause, not the full silence.
    const whole = speechSamples('hey jarvis, remind me in an hour to call mom', { padS: [0.5, 1.5] });
    const quick = await ended([whole]);
    expect(quick.asked).toEqual(['remind me in an hour to call mom']);
    expect(quick.end?.state).toBe('complete');
    expect(quick.settled).toEqual(['settle-start', 'settle-end']); // scored during the pause
    // A pause of 0.5 s inside: "what time is it" could be whole, but "in tokyo" may follow; it
    // does. "set a timer for ten" is not whole: the unit after the pause is kept.
    // Both ways of making the pause: the part before it synthesized alone (it ends like a
    // finished sentence), and cut into the sentence synthesized whole (it sounds unfinished).
    const hesitant = (command: string, layout: 'hesitant' | 'hesitant-whole') =>
      makeClip({ wake: 'hey jarvis', command, voice: { synth: 'espeak', name: 'en-us' }, layout, noise: 'clean', pauseS: 0.5 }, clipDir());
    for (const [command, layout] of [
      ['what time is it … in tokyo', 'hesitant'], ['set a timer for ten … minutes', 'hesitant'], ['what time is it … in tokyo', 'hesitant-whole'],
    ] as const) {
      const clip = hesitant(command, layout);
      const heard = await ended([decodeWav(readFileSync(clip.wav))]);
      expect(heard.asked[0]).toMatch(command === 'set a timer for ten … minutes' ? /^set a timer for ten minutes?$/ : /^what time is it in tokyo$/);
      expect(heard.end?.atS).toBeGreaterThan(clip.lastWordEndS); // not before the last word
      expect(heard.settled).not.toContain('settle-void'); // the pause inside was never taken for the end
    }
  });

  it('waits longer in a pause after half a command: "set a timer for ten … (0.9 s) … minutes" keeps its unit', async () => {
    const clip = makeClip({ wake: 'hey jarvis', command: 'set a timer for ten … minutes', voice: { synth: 'espeak', name: 'en-us' }, layout: 'hesitant-whole', noise: 'clean', pauseS: 0.9 }, clipDir());
    const heard = async (incompletePauseS: number | undefined) => {
      const { asked, respond } = replies('Done.');
      const events: VoiceEvent[] = [];
      const loop = new VoiceLoop({ ...base(new CollectingSink(), respond), minConfidence: 0, commandState: prefixState, onEvent: (e) => events.push(e), ...(incompletePauseS === undefined ? {} : { incompletePauseS }) });
      await loop.run(scriptedSource([decodeWav(readFileSync(clip.wav))]), new AbortController().signal, true);
      return { asked: asked[0], endAtS: Number(events.find((e) => e.type === 'end_of_speech-end')?.data?.atS) };
    };
    const patient = await heard(1.5);
    expect(patient.asked).toMatch(/^set a timer for ten minutes?$/);
    expect(patient.endAtS).toBeGreaterThan(clip.lastWordEndS);
    // The full silence alone (0.7 s) ends it in the pause, before "minutes".
    const hasty = await heard(undefined);
    expect(hasty.endAtS).toBeLessThan(clip.lastWordEndS);
    expect(hasty.asked).not.toMatch(/ten minutes?$/);
  });

  it('scores a whole command while the pause runs, and hears on when the person goes on', async () => {
    // A VAD that calls any non-zero frame speech, and a recogniser that records what it got:
    // where the pause begins and ends is then exact.
    const byLevel: VoiceActivity = {
      reset: () => undefined,
      process: (chunk) => Promise.resolve(Array.from({ length: chunk.samples.length / 512 }, (_, i) => {
        const isSpeech = chunk.samples.subarray(i * 512, (i + 1) * 512).some((x) => x !== 0);
        return { seconds: 0.032, isSpeech, probability: isSpeech ? 1 : 0 };
      })),
    };
    let pushed = 0;
    const settles: number[] = [];
    const words = 'remind me in an hour to call mom';
    const recorder: typeof stt = {
      name: 'recorder',
      transcribe: () => Promise.reject(new Error('streams only')),
      stream: () => Promise.resolve({
        push: (samples) => void (pushed += samples.length),
        partial: () => words,
        settle: () => (settles.push(pushed), Promise.resolve({ text: words, confidence: 1 })),
        end: () => Promise.resolve({ text: words, confidence: 1 }),
        cancel: () => undefined,
      }),
    };
    const speech = (seconds: number) => Int16Array.from({ length: seconds * 16_000 }, (_, i) => (i % 2 ? 900 : -900));
    const events: VoiceEvent[] = [];
    const { asked, respond } = replies('Done.');
    const loop = new VoiceLoop({ ...base(new CollectingSink(), respond), vad: byLevel, stt: recorder, commandState: prefixState, onEvent: (e) => events.push(e) });
    // 0.15 s of silence: scoring starts (at 0.1 s) and is voided; 1 s: it is used.
    const [run] = await loop.run(scriptedSource([commandSamples('hey jarvis', { padS: [0.5, 0] }), speech(1.2), silence(0.15), speech(0.6), silence(1)]), new AbortController().signal, true);
    expect(run!.outcome).toBe('answered');
    expect(asked).toEqual([words]);
    const types = events.map((e) => e.type).filter((t) => t.startsWith('settle-') || t === 'end_of_speech-end');
    expect(types).toEqual(['settle-start', 'settle-end', 'settle-void', 'settle-start', 'settle-end', 'end_of_speech-end']);
    expect(events.find((e) => e.type === 'end_of_speech-end')?.data?.state).toBe('complete');
    // The audio held back during the first settle reached the recogniser: at the second
    // settle it had everything up to the second pause.
    expect(settles).toHaveLength(2);
    expect(settles[1]! - settles[0]!).toBeGreaterThanOrEqual((0.15 + 0.6) * 16_000);
    const second = events.filter((e) => e.type === 'settle-start')[1]!.data!.atS as number;
    const end = events.find((e) => e.type === 'end_of_speech-end')!.data!.atS as number;
    expect(end - second).toBeGreaterThan(0.05); // scored before the pause ended the turn
  });

  it('stopped while a command is being spoken (a room removed, the daemon stopping), it never acts on half of it', async () => {
    const controller = new AbortController();
    const { asked, respond } = replies('Done.');
    const whole = commandSamples('hey jarvis, remind me in an hour to call mom', { padS: [0.5, 0] });
    const half = whole.subarray(0, Math.floor(whole.length * 0.8));
    const runs = await new VoiceLoop(base(new CollectingSink(), respond)).run(scriptedSource([half, () => Promise.resolve(controller.abort(new Error('stopping')))]), controller.signal);
    expect(runs.map((r) => r.outcome)).toEqual(['cancelled']);
    expect(asked).toEqual([]);
  });

  it('a sender that stops streaming (a satellite\'s audio-stop) ends the command there, answered at once; the next stream is a new command', async () => {
    const audio = new PushedAudio();
    const { asked, respond } = replies('Done.');
    const events: VoiceEvent[] = [];
    const first = waitFor('run-end');
    const second = waitFor('run-end', 2);
    const loop = new VoiceLoop({ ...base(new CollectingSink(), respond), onEvent: (e) => [events.push(e), first.check(e), second.check(e)] });
    const running = loop.run(audio, new AbortController().signal);
    audio.stop(); // nothing streamed yet: nothing happens
    // The satellite's VAD stops it 0.1 s after the last word, long before IRIS's endpointer
    // would hear enough silence; and no more audio comes.
    audio.push(commandSamples('hey jarvis, what time is it', { padS: [0.3, 0.1] }).subarray(0, -100)); // not a whole frame
    audio.stop();
    await first.promise;
    audio.push(commandSamples('hey jarvis, what is two plus two', { padS: [0.3, 0.1] }));
    audio.stop();
    await second.promise;
    audio.end();
    const runs = await running;
    expect(runs.map((r) => [r.outcome, r.transcript])).toEqual([['answered', 'what time is it'], ['answered', 'what is two plus two']]);
    expect(asked).toEqual(['what time is it', 'what is two plus two']);
    expect(events.filter((e) => e.type === 'end_of_speech-end').map((e) => e.data?.state)).toEqual(['end_of_audio', 'end_of_audio']);
  });

  it('a sender that stops mid-word: what was heard is scored as always, and half a command is not acted on', async () => {
    const audio = new PushedAudio();
    const { asked, respond } = replies('Done.');
    const whole = commandSamples('hey jarvis, remind me in an hour to call mom', { padS: [0.3, 0] });
    audio.push(whole.subarray(0, Math.floor(whole.length * 0.75)));
    audio.stop();
    const sink = new CollectingSink();
    const [run] = await new VoiceLoop(base(sink, respond)).run(audio, new AbortController().signal, true);
    expect(run).toMatchObject({ outcome: 'not_understood', said: "Sorry, I didn't catch that." });
    expect(run!.confidence).toBeLessThan(minConfidence);
    expect(asked).toEqual([]);
    expect(sink.clips).toBe(1);
  });

  it('a command triggered while the follow-up window is still opening takes over: the follow-up ends, nothing is left hanging', async () => {
    const audio = new PushedAudio();
    const { asked, respond } = replies('Done.');
    // A recogniser whose second stream (the follow-up's) is slow to open, as a busy pool is.
    const opened: string[] = [];
    let release: () => void = () => undefined;
    let followUpOpen: () => void = () => undefined;
    const slow = new Promise<void>((resolve) => (release = resolve));
    const followUpPushed = new Promise<void>((resolve) => (followUpOpen = resolve));
    let followUpAsked: () => void = () => undefined;
    const followUpOpening = new Promise<void>((resolve) => (followUpAsked = resolve));
    const texts = ['what time is it', '', 'what is two plus two', ''];
    let made = 0;
    const fake: VoiceLoopOptions<{ reply: string }>['stt'] = {
      name: 'fake',
      transcribe: () => Promise.reject(new Error('streams only')),
      stream: async () => {
        const n = made++;
        if (n === 1) {
          followUpAsked();
          await slow;
        }
        opened.push(`open ${n}`);
        return {
          push: () => void (n === 1 && followUpOpen()),
          partial: () => '',
          end: () => Promise.resolve({ text: texts[n] ?? '', confidence: 1 }),
          cancel: () => void opened.push(`cancel ${n}`),
        };
      },
    };
    const ended = [waitFor('run-end'), waitFor('run-end', 2), waitFor('run-end', 3)];
    const { wake: _satelliteHearsIt, ...options } = base(new CollectingSink(), respond);
    const loop = new VoiceLoop({ ...options, stt: fake, followUpS: 3, onEvent: (e) => ended.forEach((w) => w.check(e)) });
    const running = loop.run(audio, new AbortController().signal);
    loop.trigger();
    audio.push(commandSamples('what time is it', { padS: [0.3, 1.2] }));
    await followUpOpening; // answered; the follow-up's stream is opening
    loop.trigger(); // the satellite hears the wake word again meanwhile
    const second = commandSamples('what is two plus two', { padS: [0.3, 1.2] });
    audio.push(second.subarray(0, FRAME_SAMPLES)); // the triggered command starts on it
    while (!opened.includes('open 2')) await new Promise(setImmediate);
    release(); // now the follow-up's stream opens too
    await Promise.race([followUpPushed, ended[1]!.promise]);
    audio.push(second.subarray(FRAME_SAMPLES));
    await ended[2]!.promise;
    audio.end();
    const runs = await running;
    expect(runs.slice(0, 3).map((r) => [r.run, r.outcome, r.followUp, r.transcript])).toEqual([
      [1, 'answered', false, 'what time is it'],
      [2, 'cancelled', true, undefined],
      [3, 'answered', false, 'what is two plus two'],
    ]);
    expect(asked).toEqual(['what time is it', 'what is two plus two']);
    expect(opened.filter((o) => o.endsWith(' 1'))).toEqual(['open 1', 'cancel 1']); // the follow-up's decoder given back at once
    expect(opened.indexOf('open 2')).toBeLessThan(opened.indexOf('open 1')); // it did open after the triggered command's
  });

  it('a run that may not answer (another room heard the wake word better) waits for that verdict before its words are even transcribed, then ends without a sound', async () => {
    const { asked, respond } = replies('Done.');
    const sink = new CollectingSink();
    const events: VoiceEvent[] = [];
    let verdict: (answer: boolean) => void = () => undefined;
    let asking: () => void = () => undefined;
    const pending = new Promise<void>((resolve) => (asking = resolve));
    const loop = new VoiceLoop({
      ...base(sink, respond),
      onEvent: (e) => events.push(e),
      mayAnswer: () => {
        asking();
        return new Promise<boolean>((resolve) => (verdict = resolve));
      },
    });
    const running = loop.run(scriptedSource([commandSamples('hey jarvis, what time is it'), () => pending]), new AbortController().signal, true);
    await pending; // the command has ended; the verdict is not in yet
    expect(events.map((e) => e.type)).not.toContain('stt-start');
    verdict(false);
    const [run] = await running;
    expect(run?.outcome).toBe('cancelled');
    expect(asked).toEqual([]);
    expect(sink.clips).toBe(0);
    expect(events.map((e) => e.type)).not.toContain('stt-start');
  });

  it('after not catching a command it listens again without the wake word', async () => {
    const { asked, respond } = replies('Done.');
    const runs: string[] = [];
    const first = waitFor('run-end');
    const second = waitFor('run-end', 2);
    const controller = new AbortController();
    const loop = new VoiceLoop({ ...base(new CollectingSink(), respond), followUpS: 3, onEvent: (e) => (first.check(e), second.check(e)), onRun: (run) => runs.push(`${run.outcome}${run.followUp ? ' follow-up' : ''}`) });
    await loop.run(
      scriptedSource([
        speechSamples('hey jarvis, play some jazz music', { padS: [0.5, 1.5] }),
        () => first.promise.then(() => undefined),
        commandSamples('what time is it', { padS: [0.3, 1.5] }),
        () => second.promise.then(() => controller.abort()),
      ]),
      controller.signal,
    );
    expect(runs.slice(0, 2)).toEqual(['not_understood', 'answered follow-up']);
    expect(asked).toEqual(['what time is it']);
  });

  it('a source that ends before its reply does leaves no follow-up open: the recogniser is free for the next run', async () => {
    // The reply finishes only once the source has ended (a file read to its end, a bench's room).
    let sourceEnded = (): void => undefined;
    const ended = new Promise<void>((resolve) => (sourceEnded = resolve));
    const respond = (): ReplyStream<{ reply: string }> => ({ sentences: (async function* () { await ended; yield 'Done.'; })(), result: ended.then(() => ({ reply: 'Done.' })) });
    const first = await new VoiceLoop({ ...base(new CollectingSink(), respond), followUpS: 3 }).run(scriptedSource([commandSamples('hey jarvis, what time is it', { padS: [0.5, 1.2] }), () => Promise.resolve(sourceEnded())]), new AbortController().signal);
    expect(first.map((r) => r.outcome)).toEqual(['answered']);
    // Before, the follow-up opened after run() returned and held pocketsphinx's decoder: this run never ended.
    const { asked, respond: again } = replies('Done.');
    const [next] = await new VoiceLoop(base(new CollectingSink(), again)).run(scriptedSource([commandSamples('hey jarvis, what time is it')]), new AbortController().signal, true);
    expect(next?.outcome).toBe('answered');
    expect(asked).toEqual(['what time is it']);
  }, 30_000);

  it('asks about a command heard unsurely, and acts on the yes said in the follow-up window', async () => {
    // The words are pocketsphinx's; their confidences scripted: the command's under min_confidence, the yes's sure.
    const scripted = (confidences: number[]): typeof stt => ({
      name: 'scripted',
      transcribe: async (samples) => ({ ...(await stt.transcribe(samples)), confidence: confidences.shift() ?? 0 }),
      stream: async (prime, options) => {
        const inner = await stt.stream!(prime, options);
        return { push: (x) => inner.push(x), partial: () => inner.partial(), cancel: () => inner.cancel(), end: async () => ({ ...(await inner.end()), confidence: confidences.shift() ?? 0 }) };
      },
    });
    const turn = async (clarifyFrom?: number) => {
      const config = parseConfig('[assistant]\ntimezone = "Europe/Berlin"\n', 'test');
      const { host } = nativeHost(tempDir());
      const conversation = new Conversation({ config, host, log: silentLogger, backend: { chat: () => Promise.reject(new Error('no model')) } as never, tokenizer: () => Promise.reject(new Error('no model')) });
      const runs: VoiceRun<TurnResult>[] = [];
      const [first, second] = [waitFor('run-end'), waitFor('run-end', 2)];
      const controller = new AbortController();
      const loop = new VoiceLoop<TurnResult>({
        ...base(new CollectingSink(), (text, signal, heard) => conversation.turn(text, signal, heard)), stt: scripted([0.4, 0.95]), followUpS: 3,
        ...(clarifyFrom === undefined ? {} : { clarifyFrom }),
        onEvent: (e) => (first.check(e), second.check(e)), onRun: (run) => runs.push(run),
      });
      await loop.run(scriptedSource([
        commandSamples('hey jarvis, set a timer for ten minutes', { padS: [0.5, 1.5] }),
        () => first.promise.then(() => undefined),
        speechSamples('yes', { padS: [0.3, 1.5] }),
        () => second.promise.then(() => controller.abort()),
      ]), controller.signal);
      runs.splice(2); // the follow-up after the second, ended by the abort
      const said = runs.map((r) => r.result?.reply ?? r.said ?? '');
      return { outcomes: runs.map((r) => r.outcome), said, heard: runs[0]?.transcript, timers: JSON.stringify((await host.call('list_timers', {})).content) };
    };
    const asked = await turn(0.2);
    expect(asked.heard).toMatch(/^set a timer for \w+ minutes$/);
    expect(asked.said).toEqual([`Did you say: ${asked.heard}?`, expect.stringMatching(/^Timer set for \d+ minutes\.$/)]);
    expect(asked.outcomes).toEqual(['answered', 'answered']);
    expect(asked.timers).toMatch(/You have one/);
    const without = await turn(undefined);
    expect(without.outcomes[0]).toBe('not_understood');
    expect(without.said[0]).toBe("Sorry, I didn't catch that.");
    expect(without.timers).toMatch(/You have no/);
  }, 60_000);

  /** `first` is asked; while its reply plays on an aplay blocked mid-write, "hey jarvis, cancel
   * all timers". Returns the events, with the barge-in and the stopped playback. */
  async function bargeIn<R>(first: string, respond: VoiceLoopOptions<R>['respond']) {
    const audio = virtualAudio(new Int16Array(0));
    const home = process.env.HOME;
    process.env.HOME = audio.home; // aplay reads ~/.asoundrc
    try {
      const events: VoiceEvent[] = [];
      const replying = waitFor('first-audio');
      const secondAsked = waitFor('conversation-start');
      const loop = new VoiceLoop({ ...base(aplaySink({ device: 'stuck' }), respond), followUpS: 0, onEvent: (e) => (events.push(e), replying.check(e), e.run > 1 && secondAsked.check(e)) });
      const controller = new AbortController();
      const source = scriptedSource([
        commandSamples(first, { padS: [0.5, 1] }),
        () => replying.promise.then(() => undefined), // the reply is playing (aplay is blocked mid-write)
        commandSamples('hey jarvis, cancel all timers', { padS: [0.3, 2] }),
        () => secondAsked.promise.then(() => controller.abort()),
      ]);
      await loop.run(source, controller.signal).catch(() => undefined);
      const barged = events.find((e) => e.type === 'barge-in');
      return { events, barged, stopped: events.find((e) => e.type === 'tts-end' && e.run === barged?.run) };
    } finally {
      process.env.HOME = home;
    }
  }

  it('barge-in: the wake word during a reply kills playback within 200 ms and starts a new command', async () => {
    const long = 'This is a long answer that goes on and on, so that it is still playing when the user speaks again.';
    const { asked, respond } = replies(long, long);
    const { barged, stopped } = await bargeIn('hey jarvis, what time is it', respond);
    expect(barged).toBeDefined();
    expect(stopped?.data).toMatchObject({ stopped: true });
    expect(stopped!.atMs - barged!.atMs).toBeLessThan(200);
    expect(asked[0]).toBe('what time is it');
    expect(asked[1]).toMatch(/^(?:cancel|delete|stop) all timers$/);
  });

  it('barge-in cancels the model\'s stream: Ollama sees the request dropped, the next command is answered', async () => {
    const { double, iris } = await withDouble();
    try {
      const pieces = Array.from({ length: 20 }, (_v, i) => `Here is sentence ${i + 1} of a long answer. `);
      double.script({ content: ['Going ahead, and here is a long story. ', ...pieces], pieceDelayMs: 500 });
      const conversation = iris.conversation();
      const results: Promise<TurnResult>[] = [];
      const { barged } = await bargeIn('hey jarvis, go ahead', (text: string, signal: AbortSignal) => {
        const turn = conversation.turn(text, signal);
        results.push(turn.result);
        return turn;
      });
      expect(barged).toBeDefined();
      await expect.poll(() => double.cancelled).toBe(1);
      expect(double.chats.map((chat) => chat.messages.at(-1)?.content)).toEqual(['go ahead']);
      await expect(results[0]).rejects.toThrow(/barge-in/);
      expect(await results[1]).toMatchObject({ route: 'local' }); // "cancel all timers", no model needed
    } finally {
      await double.close();
    }
  });

  it('listens for a follow-up without the wake word, and gives up after follow_up_s; the earcon marks each listening', async () => {
    const played: Buffer[] = [];
    const sink: AudioSink = { play: (wav) => (played.push(wav), Promise.resolve()) };
    const chime = earcon();
    const { asked, respond } = replies('Done.');
    const runs: string[] = [];
    const answered = waitFor('run-end');
    const followedUp = waitFor('run-end', 2);
    const loop = new VoiceLoop({ ...base(sink, respond), earcon: chime, followUpS: 2, onEvent: (e) => (answered.check(e), followedUp.check(e)), onRun: (run) => runs.push(`${run.outcome}${run.followUp ? ' follow-up' : ''}`) });
    await loop.run(
      scriptedSource([
        commandSamples('hey jarvis, what time is it in tokyo', { padS: [0.5, 1] }),
        () => answered.promise.then(() => undefined), // the reply is over: now the follow-up
        commandSamples('cancel all timers', { padS: [0.3, 1] }),
        () => followedUp.promise.then(() => undefined),
        silence(3),
      ]),
      new AbortController().signal,
    );
    expect(asked[0]).toBe('what time is it in tokyo');
    expect(asked[1]).toMatch(/^(?:cancel|delete|stop) all timers$/);
    expect(runs).toEqual(['answered', 'answered follow-up', 'no_speech follow-up']);
    // chime (wake word), "Done.", chime (follow-up), "Done.", chime (the last follow-up).
    expect(played.map((wav) => (wav === chime ? 'chime' : 'reply'))).toEqual(['chime', 'reply', 'chime', 'reply', 'chime']);
  });

  it('strips the wake word that the kept audio may carry', () => {
    expect(stripWakeWord('hey jarvis what time is it', 'hey_jarvis')).toBe('what time is it');
    expect(stripWakeWord('jarvis, what time is it', 'hey_jarvis')).toBe('what time is it');
    expect(stripWakeWord('what time is it', 'hey_jarvis')).toBe('what time is it');
    expect(stripWakeWord('alexa play music', 'alexa')).toBe('play music');
  });

  it('keeps 16 kHz mono frames intact through the pipeline helpers', () => {
    expect(concatSamples([Int16Array.of(1, 2), Int16Array.of(3)])).toEqual(Int16Array.of(1, 2, 3));
  });
});
