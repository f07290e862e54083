/**
 * espeak-ng as the speech engine: spawned with an argument vector (never a shell), the text on
 * stdin (never argv, where a leading "-" would read as an option), SSML off (so text cannot
 * carry markup). 13–26 ms to first audio on these machines (DESIGN.md). The `say` npm package
 * is not used: it pastes text into festival's Scheme unescaped.
 */
import { runChild } from './child.js';
import { IrisError } from '../errors.js';
import { patchStreamedHeader } from './wav.js';

export interface EspeakOptions {
  /** espeak-ng voice, e.g. "en-us". */
  voice: string;
  /** Speaking rate in words per minute; espeak-ng's default is 175. */
  rateWpm: number;
  /** The program; default "espeak-ng" on PATH. */
  command?: string;
}

/** Longest text spoken in one go (characters): a reply, never a document. */
const MAX_TEXT_CHARS = 4_000;

export class SpeechError extends IrisError {
  override name = 'SpeechError' as const;
}

/** An engine for tts.ts's `TextToSpeech` (the seam imports engines, not the other way). */
export function createEspeak(options: EspeakOptions): { synthesize(text: string, signal?: AbortSignal): Promise<Buffer> } {
  return {
    async synthesize(text, signal) {
      const args = ['-v', options.voice, '-s', String(Math.round(options.rateWpm)), '--stdout'];
      const { code, stdout: wav, stderr } = await runChild(options.command ?? 'espeak-ng', args, {
        input: plainText(text).slice(0, MAX_TEXT_CHARS),
        signal,
        missing: (cause) => new SpeechError('tts_missing', 'espeak-ng is not installed (apt install espeak-ng)', { cause }),
      });
      if (code !== 0 || wav.length < 44) {
        throw new SpeechError('tts_failed', `espeak-ng failed (exit ${code}): ${stderr.trim() || 'no audio'}`);
      }
      return patchStreamedHeader(wav); // --stdout leaves placeholder sizes
    },
  };
}

/**
 * Text as espeak-ng should read it: as words. It reads `[[…]]` as phoneme codes and control
 * characters (Ctrl-A) as embedded commands that change voice, speed or volume, so brackets and
 * control characters become spaces; SSML is already off (no `-m`).
 */
export function plainText(text: string): string {
  return text.replace(/[[\]\u0000-\u0008\u000B-\u001F\u007F-\u009F]/g, ' ');
}
