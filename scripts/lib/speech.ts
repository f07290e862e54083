/**
 * Speech fixtures for tests and benchmarks: espeak-ng in a chosen voice and speed, resampled to
 * 16 kHz mono 16-bit by sox with dithering off (-D), so the same text gives the same samples
 * every run, with silence before and after.
 */
import { execFileSync } from 'node:child_process';

export interface SpeechOptions {
  voice?: string;
  /** Words per minute; espeak-ng's default is 175. */
  wpm?: number;
  /** Silence before and after (seconds). */
  padS?: [number, number];
}

/** Write `text`, spoken, to the WAV file `out`; `scratch` is a temporary file it may use. */
export function speakToWav(text: string, out: string, scratch: string, options: SpeechOptions = {}): void {
  const { voice = 'en-us', wpm = 175, padS = [0.5, 1.5] } = options;
  execFileSync('espeak-ng', ['-v', voice, '-s', String(wpm), '-w', scratch, '--', text]);
  execFileSync('sox', ['-D', scratch, '-r', '16000', '-c', '1', '-b', '16', out, 'pad', String(padS[0]), String(padS[1])]);
}
