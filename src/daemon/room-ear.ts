/**
 * The microphone's front end from the config (pipeline/frontend.ts): the echo canceller and
 * the stop word, each left out with a logged reason when its library is missing, so the voice
 * still works. The daemon's live microphone uses the speaker's reference and the arrival
 * clock; `iris listen --playback` a recording of what was played and the file's positions.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Config } from '../config/schema.js';
import { messageOf } from '../errors.js';
import type { Logger } from '../log.js';
import { SPEECH_FORMAT, type AudioChunk, type AudioSource } from '../pipeline/audio.js';
import { PushedAudio } from '../pipeline/capture.js';
import { EchoCanceller, EchoReference, MAX_MIC_LAG_S, liveClock } from '../pipeline/echo.js';
import type { RoomEchoFile } from '../pipeline/echo-memory.js';
import { frontEnd, ownAudio } from '../pipeline/frontend.js';
import type { AudioSink } from '../pipeline/audio.js';
import { Speaker } from '../pipeline/playback.js';
import { StopWord } from '../pipeline/stopword.js';
import { StopWordWhilePlaying } from '../pipeline/stopword-lifecycle.js';
import { OWN_LEAD_S } from '../pipeline/residual.js';
import type { WakeWordDetector } from '../pipeline/wakeword.js';

const OWN_LEAD = Math.round(OWN_LEAD_S * SPEECH_FORMAT.rate);

export interface RoomStats {
  /** The canceller in use ("speexdsp", "webrtc"), or why there is none. */
  canceller: string;
  /** Whether IRIS's own audio is being cancelled from the microphone. */
  cancelling: boolean;
  delayMs?: number;
  erleDb?: number;
  /** The canceller found IRIS's speaker clipping (echo.ts `clipModel`): its echo is distorted. */
  clipping: boolean;
  /** Seconds of IRIS the canceller's echo estimate rests on (echo.ts `stats.ageS`: this run's, and a placed remembered room's). */
  ageS?: number;
  /** Where the stop word was last heard (stream seconds). */
  stopAtS?: number;
}

export interface FrontEndInput {
  source: AudioSource;
  /** A recording of what the speaker played, from the source's first sample. */
  played?: Int16Array;
  /** The live speaker: its reference, and whether it plays. */
  speaker?: Speaker;
  /** The person said the stop word. */
  onStop?: (atS: number) => void;
  /** Where the canceller's room is kept across restarts (the daemon's state dir); none: it starts fresh each time. */
  echoRoom?: RoomEchoFile;
  /** A wake-word detector of its own for the stop word's level route (frontend.ts `wake`: one more openWakeWord pass over the microphone while IRIS plays); none: the spotter alone. */
  wake?: WakeWordDetector;
}

export interface FrontEnd {
  source: AudioSource;
  /** What IRIS played for a chunk `source` gave, a little ahead of its echo; none while nothing plays (the wake word's own-voice veto). */
  ownVoice(chunk: AudioChunk): Int16Array | undefined;
  stats(): RoomStats;
  /** Keep what the canceller learned of the room (`echoRoom`) and free the native states. */
  stop(): Promise<void>;
}

/** How often what the canceller learned is kept while it runs (ms), and how much more of IRIS it must have heard since (s). */
const KEEP_EVERY_MS = 60_000;
const KEEP_MORE_S = 10;

export async function createFrontEnd(config: Config, log: Logger, input: FrontEndInput): Promise<FrontEnd> {
  const reference = input.speaker?.reference ?? new EchoReference(Math.max(8, (input.played?.length ?? 0) / SPEECH_FORMAT.rate + 1));
  if (input.played) reference.write(input.played, 0);
  let canceller: EchoCanceller | undefined;
  let why = 'off ([audio] echo_cancel = false)';
  if (config.audio.echo_cancel) {
    try {
      // With speexdsp only (the remembered room was measured there; webrtc is not the default).
      const remembered = config.audio.echo_canceller === 'webrtc' ? undefined : await input.echoRoom?.load();
      if (remembered) log.info(`echo canceller starts from the room it learned before (${Math.round(remembered.heardS)} s of IRIS, delay ${Math.round(remembered.delayMs)} ms)`);
      canceller = await EchoCanceller.create(reference, {
        ...(remembered ? { remembered } : {}),
        engine: config.audio.echo_canceller,
        onFallback: (reason) => log.warn(`echo canceller ${reason}`),
        onDelay: (delayMs) => log.info(`echo canceller ${canceller?.engine ?? ''}: speaker-to-microphone delay ${Math.round(delayMs)} ms`),
        onJudged: (verdict, tookDb, room) => log.info(room === 'learned'
          ? `echo canceller: the room's response learned from IRIS's first seconds ${verdict === 'kept' ? 'is taken off from here' : 'took less than the filter did; the filter goes on'} (${tookDb.toFixed(0)} dB of IRIS's next second)`
          : verdict === 'kept'
            ? `echo canceller: the room it remembered fits (${tookDb.toFixed(0)} dB of IRIS's first second from its placing taken)`
            : `echo canceller: the room it remembered does not fit (${tookDb.toFixed(0)} dB taken: the speaker or the room changed); learning it afresh`),
      });
      why = canceller.engine;
    } catch (error) {
      why = `off: ${messageOf(error)}`;
      log.warn(`echo cancellation ${why}`);
    }
  }
  let stopWord: StopWordWhilePlaying | undefined;
  if (config.audio.stop_word) {
    try {
      // The canceller's age in IRIS's seconds, not the stop word's (made again after each idle pause):
      // this run's and a placed remembered room's (echo.ts `stats.ageS`).
      const heardS = canceller ? () => canceller?.stats.ageS ?? 0 : undefined;
      stopWord = new StopWordWhilePlaying(await StopWord.prepare(heardS ? { heardS } : {}), { onError: (error) => log.warn(`stop word off: ${messageOf(error)}`) });
    } catch (error) {
      log.warn(`stop word off: ${messageOf(error)}`);
    }
  }
  let stopAtS: number | undefined;
  const speaker = input.speaker;
  // Live: each chunk stamped when it arrived, not when a busy loop got round to it (at start
  // the models load while the microphone queues up seconds of audio).
  const arrived = new WeakMap<AudioChunk, number>();
  let arrivedSamples = 0;
  const clock = liveClock(() => arrivedSamples);
  const ownOf = new WeakMap<AudioChunk, Int16Array>();
  const source = frontEnd(speaker ? stampArrivals(input.source, arrived) : input.source, {
    ...(canceller ? { canceller } : {}),
    ...(stopWord ? { stopWord } : {}),
    ...(stopWord && input.wake ? { wake: input.wake } : {}),
    clockOf: speaker
      ? (chunk) => {
        arrivedSamples = Math.round(((arrived.get(chunk) ?? performance.now()) * SPEECH_FORMAT.rate) / 1000);
        return clock(chunk);
      }
      : (chunk) => Math.round(chunk.atS * SPEECH_FORMAT.rate),
    // IRIS's own audio, 0.2 s ahead of its echo: the stop word's second spotter and the wake
    // word's second detector hear what IRIS says first.
    own: ownAudio((from, length) => reference.read(from, length), () => Math.round(((canceller?.stats.delayMs ?? 0) * SPEECH_FORMAT.rate) / 1000), OWN_LEAD),
    ownOf,
    armed: (at, length) => (speaker?.playing ?? false) || reference.sounding(at - SPEECH_FORMAT.rate / 4, at + length),
    // A candidate "stop" waiting for its verdict holds the sound: silent within the 300 ms.
    onHold: (held) => {
      log.debug(held ? 'sound held: a word that may be "stop" is being judged' : 'sound let go: it was not "stop"');
      speaker?.hold(held);
    },
    onStop: (atS) => {
      stopAtS = atS;
      log.info(`heard "stop" at ${atS.toFixed(2)} s`);
      input.onStop?.(atS);
    },
  });
  // What the canceller learned, kept now and then and at the end: the next start begins from it.
  let keptS = 0;
  const keep = async (): Promise<void> => {
    if (!input.echoRoom || !canceller || canceller.stats.heardS < keptS + KEEP_MORE_S) return;
    const learned = await canceller.learned();
    if (!learned) return;
    keptS = learned.heardS;
    await input.echoRoom?.save(learned).catch((error: unknown) => log.warn(`the room's echo could not be kept: ${messageOf(error)}`));
  };
  const keeping = input.echoRoom && canceller ? setInterval(() => void keep(), KEEP_EVERY_MS) : undefined;
  keeping?.unref();
  return {
    source,
    ownVoice: (chunk) => ownOf.get(chunk),
    stats: () => {
      const echo = canceller?.stats;
      return {
        canceller: why,
        cancelling: canceller !== undefined,
        clipping: echo?.clipLevel !== undefined,
        ...(echo ? { ageS: echo.ageS } : {}),
        ...(echo?.delayMs === undefined ? {} : { delayMs: echo.delayMs }),
        ...(echo?.erleDb === undefined ? {} : { erleDb: echo.erleDb }),
        ...(stopAtS === undefined ? {} : { stopAtS }),
      };
    },
    stop: async () => {
      clearInterval(keeping);
      const kept = keep();
      canceller?.destroy();
      stopWord?.free();
      await kept;
    },
  };
}

/** How far ahead of its reader the source is read (seconds); past that it waits for the reader. */
const MAX_QUEUED_S = MAX_MIC_LAG_S;

/**
 * `source` read as fast as it delivers into a `PushedAudio` (the queue a satellite's audio
 * waits in), each chunk's arrival noted in `arrived` (performance.now() ms): the microphone's
 * clock is when the audio came, which a loop busy with the models cannot tell from when it
 * read it. Nothing is dropped: once `MAX_QUEUED_S` wait unread, the source is read only as
 * the reader takes chunks (a source faster than real time — a file, ALSA's file plugin — is
 * then paced by its reader, as without this).
 */
export function stampArrivals(source: AudioSource, arrived: WeakMap<AudioChunk, number>): AudioSource {
  return {
    async *frames(signal) {
      const inner = new AbortController();
      const queue = new PushedAudio(MAX_QUEUED_S);
      let failure: unknown;
      const pump = (async () => {
        try {
          for await (const chunk of source.frames(AbortSignal.any([signal, inner.signal]))) {
            queue.push(chunk.samples);
            await queue.whenRoom();
          }
        } catch (error) {
          failure = error;
        } finally {
          queue.end();
        }
      })();
      try {
        for await (const chunk of queue.frames(signal)) {
          arrived.set(chunk, queue.readingMs);
          yield chunk;
        }
        if (failure !== undefined) throw failure instanceof Error ? failure : new Error(messageOf(failure));
      } finally {
        inner.abort(new DOMException('reader gone', 'AbortError'));
        queue.end();
        await pump;
      }
    },
  };
}

export interface EchoProbe {
  /** The microphone. */
  source: AudioSource;
  /** The speaker (wrapped in a `Speaker`, as the daemon's is). */
  sink: AudioSink;
  /** What to play: a WAV of speech a couple of seconds long (the delay is found by cross-correlation). */
  wav: Buffer;
  /** Microphone read before the sound starts and after it ends (ms); default 400 and 800. */
  leadMs?: number;
  tailMs?: number;
}

/**
 * Play `wav` on the speaker while the microphone listens through the daemon's own front end
 * (live clock, the speaker's reference, the canceller): the canceller in use and the delay it
 * measured from speaker to microphone (`iris doctor`). No delay when no echo was heard (the
 * speaker does not reach the microphone, or it is too quiet).
 */
export async function probeEcho(config: Config, log: Logger, probe: EchoProbe): Promise<RoomStats> {
  const speaker = new Speaker(probe.sink);
  const ear = await createFrontEnd({ ...config, audio: { ...config.audio, stop_word: false } }, log, { source: probe.source, speaker });
  const controller = new AbortController();
  let started: () => void = () => undefined;
  const listening = new Promise<void>((resolve) => (started = resolve));
  const reading = (async () => {
    for await (const _chunk of ear.source.frames(controller.signal)) started(); // the canceller works as the chunks pass
  })().catch((error: unknown) => {
    if (!controller.signal.aborted) throw error;
  });
  try {
    const silent = sleep(5_000, undefined, { signal: controller.signal }).then(() => { throw new Error('the microphone gave no audio in 5 s'); });
    silent.catch(() => undefined); // aborted once measured
    await Promise.race([listening, reading, silent]);
    await sleep(probe.leadMs ?? 400);
    await speaker.play(probe.wav, controller.signal);
    await sleep(probe.tailMs ?? 800);
    return ear.stats();
  } finally {
    controller.abort(new DOMException('measured', 'AbortError'));
    await reading.catch(() => undefined);
    await ear.stop();
  }
}
