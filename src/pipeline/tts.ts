/**
 * The `TextToSpeech` seam: text in, WAV audio out, cancellable. Only the adapter knows the
 * engine (espeak.ts spawns espeak-ng).
 */
export interface TextToSpeech {
  /** A complete WAV file (RIFF header with its format) for `text`. */
  synthesize(text: string, signal?: AbortSignal): Promise<Buffer>;
}
