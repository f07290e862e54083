/**
 * Answer early, take it back (issue 24): a read-only answer to whole words that could still go
 * on starts at `complete_pause_s`; when the person goes on it stops within 150 ms, the
 * conversation forgets it and the whole command is answered. Actions wait the full pause.
 * Real conversation and native tools; the audio, VAD, recogniser, voice and speaker are fakes
 * paced by fake timers (80 ms chunks), so where things happen in the audio is exact.
 */
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { TurnResult } from '../src/conversation/engine.js';
import { prefixState } from '../src/intents/prefix.js';
import { matchIntent } from '../src/intents/match.js';
import { FRAME_SAMPLES, SPEECH_FORMAT, type AudioChunk, type AudioSink, type AudioSource } from '../src/pipeline/audio.js';
import { TAKE_BACK_NEAR_DB } from '../src/pipeline/early.js';
import { ownAudio } from '../src/pipeline/frontend.js';
import type { VoiceEvent } from '../src/pipeline/events.js';
import type { SpeechToText } from '../src/pipeline/stt.js';
import type { TextToSpeech } from '../src/pipeline/tts.js';
import type { VoiceActivity } from '../src/pipeline/vad.js';
import { VoiceLoop, type VoiceLoopOptions, type VoiceRun } from '../src/pipeline/voice.js';
import { decodeWav, encodeWav } from '../src/pipeline/wav.js';
import { withDouble, type Setup } from './helpers/conversation.js';

const CHUNK_S = FRAME_SAMPLES / SPEECH_FORMAT.rate; // 0.08
const chunks = (n: number, level: number) => Int16Array.from({ length: n * FRAME_SAMPLES }, (_, i) => (level === 0 ? 0 : i % 2 ? level : -level));
const speech = (n: number) => chunks(n, 900);
const silence = (n: number) => chunks(n, 0);
const tone = (length: number, level: number) => Int16Array.from({ length }, (_, i) => (level === 0 ? 0 : i % 2 ? level : -level));

/** Where the loop is in the audio: the end of the last chunk it was given (seconds). */
interface Position {
  atS: number;
}

/** The parts in real time: one 80 ms chunk per 80 ms of (fake) clock. */
function pacedSource(parts: Int16Array[], position: Position): AudioSource {
  return {
    async *frames(signal) {
      let at = 0;
      for (const part of parts) {
        for (let i = 0; i < part.length && !signal.aborted; i += FRAME_SAMPLES) {
          await new Promise((resolve) => setTimeout(resolve, CHUNK_S * 1000));
          const chunk: AudioChunk = { ...SPEECH_FORMAT, samples: part.slice(i, i + FRAME_SAMPLES), atS: at / SPEECH_FORMAT.rate };
          at += FRAME_SAMPLES;
          position.atS = at / SPEECH_FORMAT.rate;
          yield chunk;
        }
      }
    },
  };
}

/** Any non-zero chunk is speech: one frame per chunk. */
const byLevel: VoiceActivity = {
  reset: () => undefined,
  process: (chunk) => {
    const isSpeech = chunk.samples.some((x) => x !== 0);
    return Promise.resolve([{ seconds: chunk.samples.length / SPEECH_FORMAT.rate, isSpeech, probability: isSpeech ? 1 : 0 }]);
  },
};

/** A recogniser that hears `first` until more than `firstS` of speech came, then `whole` (at `wholeConfidence`); `overEcho` records that it was told the rest lies over IRIS's echo. */
function recogniser(first: string, whole: string, firstS: number, wholeConfidence = 0.9, told: { overEcho: boolean } = { overEcho: false }): SpeechToText {
  return {
    name: 'scripted',
    transcribe: () => Promise.reject(new Error('streams only')),
    stream: () => {
      let speechS = 0;
      const words = () => (speechS > firstS + 1e-9 ? { text: whole, confidence: wholeConfidence } : { text: first, confidence: 0.9 });
      return Promise.resolve({
        overEcho: () => void (told.overEcho = true),
        push: (samples: Int16Array) => {
          for (let i = 0; i < samples.length; i += FRAME_SAMPLES) if (samples.subarray(i, i + FRAME_SAMPLES).some((x) => x !== 0)) speechS += CHUNK_S;
        },
        partial: () => (speechS === 0 ? '' : words().text),
        settle: () => Promise.resolve(words()),
        end: () => Promise.resolve(words()),
        cancel: () => undefined,
      });
    },
  };
}

/** A voice that says each sentence in 1.2 s (silence, or IRIS's tone at `level`), remembering what it said. */
function voice(level = 0): TextToSpeech & { said: string[] } {
  const said: string[] = [];
  return { said, synthesize: (text) => (said.push(text), Promise.resolve(encodeWav(tone(1.2 * SPEECH_FORMAT.rate, level)))) };
}

interface Play {
  startedAtS: number;
  stoppedAtS?: number;
}

/** A speaker that plays for the clip's length on the fake clock, and stops when its signal aborts. */
function speaker(position: Position, onPlay?: () => void): AudioSink & { plays: Play[] } {
  const plays: Play[] = [];
  return {
    plays,
    play: (wav, signal) => new Promise<void>((resolve, reject) => {
      const play: Play = { startedAtS: position.atS };
      plays.push(play);
      onPlay?.();
      const stop = () => {
        clearTimeout(timer);
        play.stoppedAtS = position.atS;
        reject(signal?.reason as Error);
      };
      const timer = setTimeout(() => {
        signal?.removeEventListener('abort', stop);
        resolve();
      }, (decodeWav(wav).length / SPEECH_FORMAT.rate) * 1000);
      signal?.addEventListener('abort', stop, { once: true });
    }),
  };
}

/** IRIS's voice in the echo room (a steady tone), and what the canceller leaves of its echo at the microphone: −30 dB by default, with no delay. */
const IRIS_LEVEL = 3000;
const RESIDUAL = 0.03;
/** How far ahead of its echo IRIS's own audio is handed out (the daemon's front end: 0.2 s). */
const OWN_LEAD_S = 0.2;

interface EchoRoom {
  /** The parts in real time with IRIS's residual echo added, IRIS's earlier reply first (`replyS`); `start` is called where the command begins, after it. */
  source(parts: Int16Array[], position: Position, plays: Play[], start: () => void): AudioSource;
  /** IRIS's own audio for a chunk, as the daemon's front end hands it out (`ownAudio`: `OWN_LEAD_S` ahead of its echo); none when nothing sounded within 0.25 s. */
  own(chunk: AudioChunk, plays: Play[]): Int16Array | undefined;
}

/** A room where IRIS's earlier reply sounded for `replyS` before the command, then whatever the loop plays (1.2 s clips, unless stopped). */
function echoRoom(replyS = 1.2, residual = RESIDUAL): EchoRoom {
  let own: ((at: number, length: number) => Int16Array) | undefined;
  const sounds = (plays: Play[]) => [{ fromS: 0, toS: replyS }, ...plays.map((p) => ({ fromS: p.startedAtS, toS: p.stoppedAtS ?? p.startedAtS + 1.2 }))];
  /** IRIS's tone, scaled by `gain`, where it sounded during the `length` samples from `atS`. */
  const sounded = (plays: Play[], atS: number, length: number, gain: number) => Int16Array.from({ length }, (_, i) => {
    const t = atS + i / SPEECH_FORMAT.rate;
    return sounds(plays).some((s) => t >= s.fromS && t < s.toS) ? Math.round(gain * (i % 2 ? IRIS_LEVEL : -IRIS_LEVEL)) : 0;
  });
  return {
    source: (parts, position, plays, start) => ({
      async *frames(signal) {
        const start0 = Math.round(replyS / CHUNK_S);
        const all = [silence(start0), ...parts];
        let at = 0;
        for (const part of all) {
          for (let i = 0; i < part.length && !signal.aborted; i += FRAME_SAMPLES) {
            await new Promise((resolve) => setTimeout(resolve, CHUNK_S * 1000));
            if (at === start0 * FRAME_SAMPLES) start();
            const atS = at / SPEECH_FORMAT.rate;
            const echo = sounded(plays, atS, FRAME_SAMPLES, residual);
            const samples = part.slice(i, i + FRAME_SAMPLES).map((x, k) => x + (echo[k] ?? 0));
            at += FRAME_SAMPLES;
            position.atS = at / SPEECH_FORMAT.rate;
            yield { ...SPEECH_FORMAT, samples, atS };
          }
        }
      },
    }),
    own: (chunk, plays) => {
      // Armed as the front end's chunks are: something sounds in the chunk or did within 0.25 s before it.
      const endS = chunk.atS + chunk.samples.length / SPEECH_FORMAT.rate;
      if (!sounds(plays).some((s) => s.fromS < endS && s.toS > chunk.atS - 0.25)) return undefined;
      own ??= ownAudio((from, length) => sounded(plays, from / SPEECH_FORMAT.rate, length, 1), () => 0, OWN_LEAD_S * SPEECH_FORMAT.rate);
      return own(Math.round(chunk.atS * SPEECH_FORMAT.rate), chunk.samples.length);
    },
  };
}

/** Calls of the loop's `earlyAnswer` still being judged: the clock waits for them, as real time would (they take microseconds). */
const judging = new Set<Promise<boolean>>();
const judged = (judge: (text: string) => Promise<boolean>) => (text: string): Promise<boolean> => {
  const verdict = judge(text);
  judging.add(verdict);
  void verdict.finally(() => judging.delete(verdict));
  return verdict;
};

/** Run the loop over `parts` to its one run, advancing the fake clock chunk by chunk. */
async function runPaced(options: Omit<VoiceLoopOptions<TurnResult>, 'vad' | 'sink' | 'tts'>, parts: Int16Array[], onPlay?: (loop: VoiceLoop<TurnResult>, position: Position) => void, room?: EchoRoom) {
  const position: Position = { atS: 0 };
  const sink = speaker(position, () => onPlay?.(loop, position));
  const tts = voice(room ? IRIS_LEVEL : 0);
  const events: VoiceEvent[] = [];
  const loop = new VoiceLoop<TurnResult>({
    vad: byLevel, sink, tts, followUpS: 0, minConfidence: 0.5, endpoint: { silenceS: 0.7 }, completePauseS: 0.2, onEvent: (e) => events.push(e),
    ...(room ? { echoResidual: { audio: (chunk: AudioChunk) => room.own(chunk, sink.plays), minNearDb: TAKE_BACK_NEAR_DB } } : {}),
    ...options,
  });
  // No wake word here: the first audio is the command (in a room, the first after IRIS's earlier reply).
  if (!room) loop.trigger();
  let run: VoiceRun<TurnResult> | undefined;
  const source = room ? room.source(parts, position, sink.plays, () => loop.trigger()) : pacedSource(parts, position);
  const done = loop.run(source, new AbortController().signal, true).then(([r]) => (run = r));
  while (run === undefined) {
    await vi.advanceTimersByTimeAsync(CHUNK_S * 1000);
    // Turns of the real event loop, so work that is not on the fake clock (a dynamic import of the
    // number reader, a timer's file written) is done before the next 80 ms of audio, as in real time.
    for (let turn = 0; turn < 10; turn++) await new Promise((resolve) => setImmediate(resolve));
    await Promise.all(judging);
  }
  await done;
  return { run, sink, tts, events, loop };
}

describe('answer early, take it back', () => {
  let setup: Setup;
  beforeAll(async () => {
    // The fake clock runs ahead of real file writes (a timer's state): no tool call times out by it.
    setup = await withDouble({ tools: { timeout_s: 600 } });
    // Loaded before the clock is faked: the number reader and the time zones' gazetteer.
    await matchIntent('what is two plus two');
    await setup.iris.host.call('get_current_time', { timezone: 'tokyo' });
    return () => setup.double.close();
  });
  afterEach(() => void vi.useRealTimers());

  it('answers "what time is it" at the short pause, stops within 150 ms when "in Tokyo" follows, forgets it and answers Tokyo', async () => {
    const conversation = setup.iris.conversation();
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    // 1.04 s "what time is it", a 0.48 s pause (past complete_pause_s, short of silence_s), 0.64 s "in tokyo".
    const resumeAtS = 13 * CHUNK_S + 6 * CHUNK_S;
    const { run, sink, tts, events, loop } = await runPaced({
      stt: recogniser('what time is it', 'what time is it in tokyo', 13 * CHUNK_S),
      respond: (text, signal, heard) => conversation.turn(text, signal, heard),
      commandState: prefixState,
      earlyAnswer: judged((text) => conversation.answersEarly(text)),
      takeBackS: 1,
    }, [speech(13), silence(6), speech(8), silence(20)]);

    // The early answer was playing before the person went on, and stopped within 150 ms of it.
    expect(tts.said).toHaveLength(2);
    expect(tts.said[0]).toMatch(/^It's \d{1,2}:\d{2} [AP]M\.$/);
    const early = sink.plays[0]!;
    expect(early.startedAtS).toBeLessThan(resumeAtS);
    expect(early.startedAtS).toBeLessThanOrEqual(13 * CHUNK_S + 0.2 + 2 * CHUNK_S); // at complete_pause_s, not silence_s
    expect(early.stoppedAtS).toBeDefined();
    expect(early.stoppedAtS! - resumeAtS).toBeLessThanOrEqual(0.15);
    expect(early.stoppedAtS! - resumeAtS).toBeGreaterThan(0); // stopped by the speech, not before it

    // The whole command was answered, and the run reports the take-back, not the early answer.
    expect(run.outcome).toBe('answered');
    expect(run.transcript).toBe('what time is it in tokyo');
    expect(run.result?.reply).toMatch(/in Tokyo\.$/);
    expect(tts.said[1]).toMatch(/in Tokyo\.$/);
    expect(run.events.filter((e) => e.type === 'answer-taken-back')).toHaveLength(1);
    expect(run.events.some((e) => e.type === 'answer-early')).toBe(false);
    expect(run.events.filter((e) => e.type === 'conversation-start').map((e) => e.data?.text)).toEqual(['what time is it in tokyo']);
    expect(events.some((e) => e.type === 'answer-early')).toBe(true); // it was live
    expect(loop.earlyAnswers).toEqual({ started: 1, takenBack: 1 });

    // Nothing of the early answer is in the conversation: the model sees only the whole command.
    vi.useRealTimers();
    setup.double.script({ content: ['Here is one.'] });
    await conversation.turn('tell me a joke').result;
    const sent = setup.double.chats.at(-1)!.messages;
    expect(sent.filter((m) => m.role === 'user').map((m) => m.content)).toEqual(['what time is it in tokyo', 'tell me a joke']);
    expect(sent.filter((m) => m.role === 'assistant')).toHaveLength(1);
  });

  it('keeps an early answer when the person does not go on: one answer, started at the short pause', async () => {
    const conversation = setup.iris.conversation();
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const { run, sink, tts, loop } = await runPaced({
      stt: recogniser('what time is it', 'what time is it', 13 * CHUNK_S),
      respond: (text, signal, heard) => conversation.turn(text, signal, heard),
      commandState: prefixState,
      earlyAnswer: judged((text) => conversation.answersEarly(text)),
    }, [speech(13), silence(25)]);
    expect(run.outcome).toBe('answered');
    expect(tts.said).toHaveLength(1);
    expect(sink.plays).toHaveLength(1);
    expect(sink.plays[0]!.stoppedAtS).toBeUndefined(); // played to its end
    expect(sink.plays[0]!.startedAtS).toBeLessThanOrEqual(13 * CHUNK_S + 0.2 + 2 * CHUNK_S);
    expect(run.events.some((e) => e.type === 'answer-early')).toBe(true);
    expect(run.timings.first_audio).toBeGreaterThanOrEqual(0);
    expect(loop.earlyAnswers).toEqual({ started: 1, takenBack: 0 });
  });

  it('"stop" while an early answer plays ends it and the command, without taking "stop" for more words', async () => {
    const conversation = setup.iris.conversation();
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    let hushed: boolean | undefined;
    const { run, sink, tts, loop } = await runPaced({
      stt: recogniser('what time is it', 'what time is it stop', 13 * CHUNK_S),
      respond: (text, signal, heard) => conversation.turn(text, signal, heard),
      commandState: prefixState,
      earlyAnswer: judged((text) => conversation.answersEarly(text)),
    }, [speech(13), silence(25)], (l, position) => void queueMicrotask(() => (hushed ??= l.hush(position.atS))));
    expect(hushed).toBe(true);
    expect(run.outcome).toBe('cancelled');
    expect(tts.said).toHaveLength(1);
    expect(sink.plays).toHaveLength(1);
    expect(sink.plays[0]!.stoppedAtS).toBeDefined();
    expect(run.events.some((e) => e.type === 'stop-word')).toBe(true);
    expect(loop.earlyAnswers).toEqual({ started: 1, takenBack: 0 });
  });

  it('never answers a timer early, even where the words could go on: it waits the full pause', async () => {
    const conversation = setup.iris.conversation();
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const lastWordS = 13 * CHUNK_S;
    const { run, sink, events, loop } = await runPaced({
      stt: recogniser('set a timer for ten minutes', 'set a timer for ten minutes', lastWordS),
      respond: (text, signal, heard) => conversation.turn(text, signal, heard),
      // Every word "whole but could go on": only the answer's own property keeps it waiting.
      commandState: () => ({ complete: true, extendable: true }),
      earlyAnswer: judged((text) => conversation.answersEarly(text)),
      takeBackS: 1.5,
    }, [speech(13), silence(25)]);
    expect(run.outcome).toBe('answered');
    expect(run.result?.tool_calls.map((c) => c.name)).toEqual(['set_timer']);
    expect(events.some((e) => e.type === 'answer-early')).toBe(false);
    expect(loop.earlyAnswers).toEqual({ started: 0, takenBack: 0 });
    expect(sink.plays[0]!.startedAtS).toBeGreaterThanOrEqual(lastWordS + 0.7); // silence_s, not complete_pause_s
    expect(sink.plays[0]!.startedAtS).toBeLessThan(lastWordS + 1.2); // nor the take-back window of an early answer
  });

  describe('over IRIS\'s own echo (what the canceller leaves of it: −30 dB)', () => {
    const startS = 1.2; // IRIS's earlier reply, then the command

    it('is not taken back by its own echo at the residual IRIS\'s audio predicts', async () => {
      const conversation = setup.iris.conversation();
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
      const { run, sink, tts, events, loop } = await runPaced({
        stt: recogniser('what time is it', 'what time is it in sydney', 13 * CHUNK_S),
        respond: (text, signal, heard) => conversation.turn(text, signal, heard),
        commandState: prefixState,
        earlyAnswer: judged((text) => conversation.answersEarly(text)),
        takeBackS: 1,
      }, [speech(13), silence(30)], undefined, echoRoom(startS));
      // The VAD hears the residual as speech (any sound is speech to it here): only the level tells it from the person.
      expect(events.filter((e) => e.type === 'answer-echo').length).toBeGreaterThan(3);
      expect(loop.earlyAnswers).toEqual({ started: 1, takenBack: 0 });
      expect(tts.said).toHaveLength(1);
      expect(sink.plays).toHaveLength(1);
      expect(sink.plays[0]!.stoppedAtS).toBeUndefined(); // played to its end
      expect(run.outcome).toBe('answered');
      expect(run.transcript).toBe('what time is it');
      expect(run.result?.tool_calls.map((c) => c.arguments)).toEqual([{}]);
    });

    it('is taken back within 150 ms by the person going on above that residual, and answers the whole command', async () => {
      const conversation = setup.iris.conversation();
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
      const resumeAtS = startS + 19 * CHUNK_S;
      const { run, sink, tts, loop } = await runPaced({
        stt: recogniser('what time is it', 'what time is it in tokyo', 13 * CHUNK_S),
        respond: (text, signal, heard) => conversation.turn(text, signal, heard),
        commandState: prefixState,
        earlyAnswer: judged((text) => conversation.answersEarly(text)),
        takeBackS: 1,
      }, [speech(13), silence(6), speech(8), silence(30)], undefined, echoRoom(startS));
      const early = sink.plays[0]!;
      expect(early.startedAtS).toBeLessThan(resumeAtS);
      expect(early.stoppedAtS).toBeDefined();
      expect(early.stoppedAtS! - resumeAtS).toBeGreaterThan(0);
      expect(early.stoppedAtS! - resumeAtS).toBeLessThanOrEqual(0.15);
      expect(loop.earlyAnswers).toEqual({ started: 1, takenBack: 1 });
      const back = run.events.find((e) => e.type === 'answer-taken-back');
      expect(back?.data?.nearDb).toBeGreaterThanOrEqual(TAKE_BACK_NEAR_DB);
      expect(run.transcript).toBe('what time is it in tokyo');
      expect(tts.said[1]).toMatch(/in Tokyo\.$/);
    });
  });

  it('where the residual is as loud as the person, cannot tell them apart: a softer going-on still takes the answer back', async () => {
    const conversation = setup.iris.conversation();
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    // IRIS's residual at the person's level (900); "in tokyo" 6 dB softer than the command: 3.5 dB over the residual.
    const { run, loop } = await runPaced({
      stt: recogniser('what time is it', 'what time is it in tokyo', 13 * CHUNK_S),
      respond: (text, signal, heard) => conversation.turn(text, signal, heard),
      commandState: prefixState,
      earlyAnswer: judged((text) => conversation.answersEarly(text)),
      takeBackS: 1,
    }, [speech(13), silence(6), chunks(8, 450), silence(30)], undefined, echoRoom(1.2, 0.3));
    expect(loop.earlyAnswers.takenBack).toBe(1);
    expect(run.transcript).toBe('what time is it in tokyo');
    expect(run.result?.reply).toMatch(/in Tokyo\.$/);
  });

  it('scores the words after a take-back as heard over IRIS: below the over-speech gate they do not act', async () => {
    const conversation = setup.iris.conversation();
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const told = { overEcho: false };
    // A quiet room's command (gate 0.5); what follows the early answer is heard at 0.6, under the gate over IRIS (0.7).
    const { run, tts, loop } = await runPaced({
      stt: recogniser('what time is it', 'what time is it in sydney', 13 * CHUNK_S, 0.6, told),
      respond: (text, signal, heard) => conversation.turn(text, signal, heard),
      commandState: prefixState,
      earlyAnswer: judged((text) => conversation.answersEarly(text)),
      takeBackS: 1,
      overSpeechMinConfidence: 0.7,
    }, [speech(13), silence(6), speech(8), silence(25)]);
    expect(loop.earlyAnswers).toEqual({ started: 1, takenBack: 1 });
    expect(told.overEcho).toBe(true);
    expect(run.transcript).toBe('what time is it in sydney');
    expect(run.outcome).toBe('not_understood');
    expect(run.result).toBeUndefined();
    expect(tts.said.some((t) => /Sydney/.test(t))).toBe(false);
  });

  it('judges by the tool: the time, sums and the timers left may be answered early; timers, cancels and open questions not', async () => {
    const conversation = setup.iris.conversation();
    expect(await conversation.answersEarly('what time is it')).toBe(true);
    expect(await conversation.answersEarly('what is twelve times seven')).toBe(true);
    expect(await conversation.answersEarly('how much time is left')).toBe(true);
    expect(await conversation.answersEarly('set a timer for ten minutes')).toBe(false);
    expect(await conversation.answersEarly('cancel the timer')).toBe(false);
    expect(await conversation.answersEarly('tell me a joke')).toBe(false);
    // A question is open (cancel all timers asks first when spoken): any turn would close it.
    await conversation.turn('set a timer for ten minutes', undefined, { confidence: 0.9 }).result;
    const asked = await conversation.turn('cancel all timers', undefined, { confidence: 0.9 }).result;
    expect(asked.confirm).toBeDefined();
    expect(await conversation.answersEarly('what time is it')).toBe(false);
  });
});
