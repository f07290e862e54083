/**
 * The microphone's front end from the config (pipeline/frontend.ts): the echo canceller and
 * the stop word, each left out with a logged reason when its library is missing, so the voice
 * still works. The daemon's live microphone uses the speaker's reference and the arrival
 * clock; `iris listen --playback` a recording of what was played and the file's positions.
 */
import type { Config } from '../config/schema.js';
import { messageOf } from '../errors.js';
import type { Logger } from '../log.js';
import { SPEECH_FORMAT, type AudioSource } from '../pipeline/audio.js';
import { EchoCanceller, EchoReference, liveClock } from '../pipeline/echo.js';
import { frontEnd } from '../pipeline/frontend.js';
import type { Speaker } from '../pipeline/playback.js';
import { StopWord } from '../pipeline/stopword.js';

const OWN_LEAD = SPEECH_FORMAT.rate / 5;

export interface RoomStats {
  /** The canceller in use ("speexdsp"), or why there is none. */
  canceller: string;
  /** Whether IRIS's own audio is being cancelled from the microphone. */
  cancelling: boolean;
  delayMs?: number;
  erleDb?: number;
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
}

export interface FrontEnd {
  source: AudioSource;
  stats(): RoomStats;
  /** Free the native states. */
  stop(): void;
}

export async function createFrontEnd(config: Config, log: Logger, input: FrontEndInput): Promise<FrontEnd> {
  const reference = input.speaker?.reference ?? new EchoReference(Math.max(8, (input.played?.length ?? 0) / SPEECH_FORMAT.rate + 1));
  if (input.played) reference.write(input.played, 0);
  let canceller: EchoCanceller | undefined;
  let why = 'off ([audio] echo_cancel = false)';
  if (config.audio.echo_cancel) {
    try {
      canceller = await EchoCanceller.create(reference);
      why = 'speexdsp';
    } catch (error) {
      why = `off: ${messageOf(error)}`;
      log.warn(`echo cancellation ${why}`);
    }
  }
  let stopWord: StopWord | undefined;
  if (config.audio.stop_word) {
    try {
      stopWord = await StopWord.create();
    } catch (error) {
      log.warn(`stop word off: ${messageOf(error)}`);
    }
  }
  let stopAtS: number | undefined;
  const speaker = input.speaker;
  const source = frontEnd(input.source, {
    ...(canceller ? { canceller } : {}),
    ...(stopWord ? { stopWord } : {}),
    clockOf: speaker ? liveClock() : (chunk) => Math.round(chunk.atS * SPEECH_FORMAT.rate),
    // IRIS's own audio, 0.2 s ahead of its echo: its spotter hears a "stop" IRIS says first.
    own: (at, length) => (canceller ? canceller.played(at, length, OWN_LEAD) : reference.read(at + OWN_LEAD, length)),
    armed: (at, length) => (speaker?.playing ?? false) || reference.sounding(at - SPEECH_FORMAT.rate / 4, at + length),
    onStop: (atS) => {
      stopAtS = atS;
      log.info(`heard "${stopWord?.word ?? 'stop'}" at ${atS.toFixed(2)} s`);
      input.onStop?.(atS);
    },
  });
  return {
    source,
    stats: () => {
      const echo = canceller?.stats;
      return {
        canceller: why,
        cancelling: canceller !== undefined,
        ...(echo?.delayMs === undefined ? {} : { delayMs: echo.delayMs }),
        ...(echo?.erleDb === undefined ? {} : { erleDb: echo.erleDb }),
        ...(stopAtS === undefined ? {} : { stopAtS }),
      };
    },
    stop: () => {
      canceller?.destroy();
      stopWord?.free();
    },
  };
}
