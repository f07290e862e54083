/**
 * The `SpeechToText` seam: one utterance (16 kHz mono PCM) in, its text out, cancellable.
 * Adapters: pocketsphinx.ts (grammar, works with no downloaded model) and whisper.ts
 * (whisper.cpp, model loaded once per daemon).
 */
import { IrisError } from '../errors.js';

export interface SpeechToText {
  /** Which engine this is, for logs and `iris doctor`. */
  readonly name: string;
  /** Load models or start helpers ahead of the first utterance; optional. */
  start?(): Promise<void>;
  /** The words in `samples` (16 kHz mono int16), lower case, "" for nothing understood. */
  transcribe(samples: Int16Array, signal?: AbortSignal): Promise<Transcript>;
  /** Decode while the audio arrives, when the engine can (pocketsphinx); `prime` is audio
   * from just before (the wake phrase) to adapt to the room and voice; optional. */
  stream?(prime?: Int16Array, options?: StreamOptions): Promise<SttStream>;
  /** Stop helpers; optional. */
  stop?(): Promise<void>;
}

/** What the recogniser is told about an utterance's audio. */
export interface StreamOptions {
  /** The first `echoS` seconds of the audio pushed were heard over IRIS's own voice (what the
   * echo canceller left of it is under the words): the engine may score the words there on a
   * scale of their own. Default 0. */
  echoS?: number;
  /** IRIS's speaker clips, so its echo is distorted (the canceller models it: echo.ts `clipModel`):
   * the words over it are scored without the over-speech allowance. Default false. */
  echoDistorted?: boolean;
}

/** What was heard, and how sure the engine is of it. */
export interface Transcript {
  /** Lower case words; "" for nothing understood. */
  text: string;
  /** 0–1: below `[stt] min_confidence` IRIS asks again instead of acting. How each engine
   * scores is in its adapter. */
  confidence: number;
  /** The engine's raw measures behind `confidence`, for logs and the benchmark. */
  details?: Record<string, number>;
}

/** One utterance being decoded as it is spoken. */
export interface SttStream {
  /** More audio (16 kHz mono int16). */
  push(samples: Int16Array): void;
  /** The best words so far (not scored). */
  partial(): string;
  /** No more audio: the scored transcript. */
  end(): Promise<Transcript>;
  /**
   * The scored transcript as if the audio ended here, worked out while the person pauses, so
   * it is ready when the pause ends the turn. The stream stays open: audio pushed after it
   * voids it (the recogniser decodes the whole utterance again), and `end` with nothing pushed
   * since returns it.
   */
  settle?(): Promise<Transcript>;
  /**
   * What is pushed from here on was heard over IRIS's own voice (an early answer taken back:
   * its echo's residual lies under what follows): the transcript is scored on the over-IRIS
   * scale (as with `StreamOptions.echoS`), with nothing forgiven for the echo. Optional.
   */
  overEcho?(): void;
  /** Drop the utterance (idempotent; also fine after `end`). */
  cancel(): void;
}

export class SttError extends IrisError {
  override name = 'SttError' as const;
}

/**
 * Recognisers that decode one utterance at a time (pocketsphinx), shared by rooms that may speak
 * at once: an utterance takes a free one; when all are busy another is made, up to `max`, and
 * past that it waits for one. Memory follows the commands in flight, not the number of rooms.
 */
export function pooledStt(create: () => SpeechToText, max = 4): SpeechToText {
  const first = create();
  const all: SpeechToText[] = [first];
  const idle: SpeechToText[] = [first];
  const waiting: { resolve: (engine: SpeechToText) => void; reject: (error: Error) => void }[] = [];
  let stopped = false;
  const stoppedError = () => new SttError('stt_stopped', 'speech to text stopped');
  const take = async (): Promise<SpeechToText> => {
    if (stopped) throw stoppedError();
    const free = idle.pop();
    if (free !== undefined) return free;
    if (all.length >= max) return new Promise((resolve, reject) => waiting.push({ resolve, reject }));
    const made = create();
    all.push(made);
    try {
      await made.start?.();
    } catch (error) {
      all.splice(all.indexOf(made), 1); // a slot for the next try, not a broken engine kept
      throw error;
    }
    if (stopped) {
      await made.stop?.().catch(() => undefined); // started after the pool stopped: not kept running
      throw stoppedError();
    }
    return made;
  };
  const give = (engine: SpeechToText): void => {
    const next = waiting.shift();
    if (next !== undefined) next.resolve(engine);
    else idle.push(engine);
  };
  const pool: SpeechToText = {
    name: first.name,
    async start() {
      await first.start?.();
    },
    async transcribe(samples, signal) {
      const engine = await take();
      try {
        return await engine.transcribe(samples, signal);
      } finally {
        give(engine);
      }
    },
    async stop() {
      // Rooms waiting for a free recogniser are told, not left hanging.
      stopped = true;
      for (const waiter of waiting.splice(0)) waiter.reject(stoppedError());
      await Promise.all(all.map((engine) => engine.stop?.() ?? Promise.resolve()));
    },
  };
  if (first.stream === undefined) return pool;
  pool.stream = async (prime, options) => {
    const engine = await take();
    let stream: SttStream;
    try {
      stream = await (engine.stream?.(prime, options) ?? Promise.reject(new SttError('stt_failed', `${engine.name} cannot decode as audio arrives`)));
    } catch (error) {
      give(engine);
      throw error;
    }
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      give(engine);
    };
    return {
      push: (samples) => stream.push(samples),
      partial: () => stream.partial(),
      ...(stream.settle === undefined ? {} : { settle: () => (stream.settle as NonNullable<SttStream['settle']>)() }),
      ...(stream.overEcho === undefined ? {} : { overEcho: () => (stream.overEcho as NonNullable<SttStream['overEcho']>)() }),
      end: () => stream.end().finally(release),
      cancel: () => {
        stream.cancel();
        release();
      },
    };
  };
  return pool;
}
