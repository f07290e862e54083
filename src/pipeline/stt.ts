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
  transcribe(samples: Int16Array, signal?: AbortSignal): Promise<string>;
  /** Stop helpers; optional. */
  stop?(): Promise<void>;
}

export class SttError extends IrisError {
  override name = 'SttError' as const;
}
