/**
 * The microphone's front end, before the wake word, the VAD and the recogniser: echo
 * cancellation with what IRIS played (echo.ts), and the stop word (stopword.ts), armed only
 * while IRIS's audio sounds. The daemon's live microphone and `iris listen --playback` run
 * the same code; only the clock differs (arrival time, or the position in the recording).
 */
import { SPEECH_FORMAT, type AudioChunk, type AudioSource } from './audio.js';
import type { EchoCanceller } from './echo.js';
import type { StopWord } from './stopword.js';
import type { WakeWordDetector } from './wakeword.js';

export interface FrontEndOptions {
  /** Removes IRIS's echo; none: the microphone as it is. */
  canceller?: EchoCanceller;
  /** The clock sample a chunk starts at (echo.ts `liveClock`, or the stream position). */
  clockOf: (chunk: AudioChunk) => number;
  /** Made when first armed and freed when idle by the daemon (stopword-lifecycle.ts). */
  stopWord?: Pick<StopWord, 'push' | 'reset' | 'holding'>;
  /** Whether the stop word listens for the chunk at clock sample `at`: something is playing. */
  armed?: (at: number, length: number) => boolean;
  /** The person said the stop word; `atS` is where it ended (stream seconds). */
  onStop?: (atS: number) => void;
  /** A candidate stop word waits for its verdict (`StopWord.holding`): hold IRIS's sound (`held`), or let it go on (turned down, or disarmed). */
  onHold?: (held: boolean) => void;
  /** What IRIS played, for mic samples from clock sample `at`, a little ahead of its echo (`ownAudio`; the stop word's own-voice check); default silence. */
  own?: (at: number, length: number) => Int16Array;
  /** Filled with IRIS's own audio (`own`) for each chunk yielded while armed: the wake word's own-voice veto (voice.ts `ownVoice`). */
  ownOf?: WeakMap<AudioChunk, Int16Array>;
  /**
   * A wake-word detector of its own (its state, the shared model sessions), run on the cancelled
   * chunks while the stop word is armed: the stop word's level route turns a burst down where the
   * wake word is being said (stopword.ts `LevelRoute.maxWakeScore`); without it there is no level route.
   */
  wake?: WakeWordDetector;
}

/**
 * IRIS's own audio for each microphone chunk from clock sample `at`, `leadSamples` ahead of its
 * echo (the reference is known before it sounds), as one stream with no gap: when it starts
 * again (after silence) it starts from the echo's own time, so the first words of a clip —
 * "hey jarvis, your timer is done" — reach the own-voice checks whole, not from `leadSamples`
 * into them. A chunk's own audio is longer then, and shorter (or empty) when the delay grows:
 * nothing is handed out twice.
 */
export function ownAudio(read: (from: number, length: number) => Int16Array, delaySamples: () => number, leadSamples: number): (at: number, length: number) => Int16Array {
  let end: number | undefined;
  return (at, length) => {
    const to = at - delaySamples() + leadSamples + length;
    // Started again (nothing handed out, or a gap longer than the lead): from the echo's own time.
    const from = end === undefined || end < to - length - leadSamples ? to - length - leadSamples : Math.min(end, to);
    end = Math.max(end ?? to, to);
    return read(from, to - from);
  };
}

/** The wake word's highest score in the cancelled `samples` (a fresh start hears a second of silence first); none without a detector. */
async function scoreOf(wake: WakeWordDetector | undefined, samples: Int16Array, chunk: AudioChunk, fresh: boolean): Promise<number | undefined> {
  if (wake === undefined) return undefined;
  if (fresh) await (wake.prime?.() ?? wake.reset());
  await wake.process({ ...chunk, samples });
  return wake.lastPeak ?? 0;
}

export function frontEnd(source: AudioSource, options: FrontEndOptions): AudioSource {
  const { canceller, clockOf, stopWord } = options;
  return {
    async *frames(signal) {
      let wasArmed = false;
      let held = false;
      const hold = (now: boolean): void => {
        if (now !== held) options.onHold?.(now);
        held = now;
      };
      for await (const chunk of source.frames(signal)) {
        if (chunk.stopped || chunk.samples.length === 0) {
          yield chunk;
          continue;
        }
        const at = clockOf(chunk);
        const samples = canceller ? canceller.process(chunk.samples, at) : chunk.samples;
        const armed = (stopWord !== undefined || options.ownOf !== undefined) && (options.armed?.(at, samples.length) ?? false);
        const own = armed ? (options.own?.(at, samples.length) ?? new Int16Array(samples.length)) : undefined;
        if (own && stopWord) {
          const wakeScore = await scoreOf(options.wake, samples, chunk, !wasArmed);
          const heard = stopWord.push(samples, own, chunk.atS + samples.length / SPEECH_FORMAT.rate, canceller ? chunk.samples : undefined, wakeScore);
          if (heard !== undefined) options.onStop?.(heard); // the sound stops: the hold's release after it finds nothing to let go
          hold(stopWord.holding);
        } else if (wasArmed) {
          stopWord?.reset();
          hold(false);
        }
        wasArmed = armed;
        const out = samples === chunk.samples ? chunk : { ...chunk, samples };
        if (own) options.ownOf?.set(out, own);
        yield out;
      }
    },
  };
}
