/**
 * The microphone's front end, before the wake word, the VAD and the recogniser: echo
 * cancellation with what IRIS played (echo.ts), and the stop word (stopword.ts), armed only
 * while IRIS's audio sounds. The daemon's live microphone and `iris listen --playback` run
 * the same code; only the clock differs (arrival time, or the position in the recording).
 */
import { SPEECH_FORMAT, type AudioChunk, type AudioSource } from './audio.js';
import type { EchoCanceller } from './echo.js';
import type { StopWord } from './stopword.js';

export interface FrontEndOptions {
  /** Removes IRIS's echo; none: the microphone as it is. */
  canceller?: EchoCanceller;
  /** The clock sample a chunk starts at (echo.ts `liveClock`, or the stream position). */
  clockOf: (chunk: AudioChunk) => number;
  /** Made when first armed and freed when idle by the daemon (stopword-lifecycle.ts). */
  stopWord?: Pick<StopWord, 'push' | 'reset'>;
  /** Whether the stop word listens for the chunk at clock sample `at`: something is playing. */
  armed?: (at: number, length: number) => boolean;
  /** The person said the stop word; `atS` is where it ended (stream seconds). */
  onStop?: (atS: number) => void;
  /** What IRIS played, for mic samples from clock sample `at`, a little ahead of its echo (the stop word's own-voice check); default silence. */
  own?: (at: number, length: number) => Int16Array;
}

export function frontEnd(source: AudioSource, options: FrontEndOptions): AudioSource {
  const { canceller, clockOf, stopWord } = options;
  return {
    async *frames(signal) {
      let wasArmed = false;
      for await (const chunk of source.frames(signal)) {
        if (chunk.stopped || chunk.samples.length === 0) {
          yield chunk;
          continue;
        }
        const at = clockOf(chunk);
        const samples = canceller ? canceller.process(chunk.samples, at) : chunk.samples;
        const armed = stopWord !== undefined && (options.armed?.(at, samples.length) ?? false);
        if (armed && stopWord) {
          const own = options.own?.(at, samples.length) ?? new Int16Array(samples.length);
          const heard = stopWord.push(samples, own, chunk.atS + samples.length / SPEECH_FORMAT.rate);
          if (heard !== undefined) options.onStop?.(heard);
        } else if (wasArmed) stopWord?.reset();
        wasArmed = armed;
        yield samples === chunk.samples ? chunk : { ...chunk, samples };
      }
    },
  };
}
