/**
 * The `TextToSpeech` seam: text in, WAV audio out, cancellable. Only the adapter knows the
 * engine (espeak.ts spawns espeak-ng); `createTextToSpeech` is the one place an engine is
 * chosen, and every engine is given text written for the ear (ear.ts).
 */
import type { Config } from '../config/schema.js';
import { forTheEar } from './ear.js';
import { createEspeak } from './espeak.js';

export interface TextToSpeech {
  /** A complete WAV file (RIFF header with its format) for `text`. */
  synthesize(text: string, signal?: AbortSignal): Promise<Buffer>;
}

/** The configured voice; what it is given to say is rewritten for the ear first. */
export function createTextToSpeech(config: Pick<Config, 'tts'>): TextToSpeech {
  const engine = createEspeak({ voice: config.tts.voice, rateWpm: config.tts.rate_wpm });
  return { synthesize: (text, signal) => engine.synthesize(forTheEar(text), signal) };
}
