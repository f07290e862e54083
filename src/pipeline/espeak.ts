/**
 * espeak-ng as the speech engine: spawned with an argument vector (never a shell), the text on
 * stdin (never argv, where a leading "-" would read as an option), SSML off (so text cannot
 * carry markup). 13–26 ms to first audio on these machines (DESIGN.md). The `say` npm package
 * is not used: it pastes text into festival's Scheme unescaped.
 */
import { spawn } from 'node:child_process';
import { IrisError } from '../errors.js';
import type { TextToSpeech } from './tts.js';
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

export function createEspeak(options: EspeakOptions): TextToSpeech {
  return {
    synthesize(text, signal) {
      return new Promise((resolve, reject) => {
        const args = ['-v', options.voice, '-s', String(Math.round(options.rateWpm)), '--stdout'];
        const child = spawn(options.command ?? 'espeak-ng', args, { stdio: ['pipe', 'pipe', 'pipe'], ...(signal ? { signal } : {}) });
        const chunks: Buffer[] = [];
        let stderr = '';
        child.stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
        child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
        child.on('error', (error: NodeJS.ErrnoException) => {
          if (signal?.aborted) return reject(signal.reason as Error);
          reject(error.code === 'ENOENT'
            ? new SpeechError('tts_missing', 'espeak-ng is not installed (apt install espeak-ng)', { cause: error })
            : error);
        });
        child.on('close', (code) => {
          if (signal?.aborted) return reject(signal.reason as Error);
          const wav = Buffer.concat(chunks);
          if (code !== 0 || wav.length < 44) {
            return reject(new SpeechError('tts_failed', `espeak-ng failed (exit ${code}): ${stderr.trim() || 'no audio'}`));
          }
          resolve(patchStreamedHeader(wav)); // --stdout leaves placeholder sizes
        });
        child.stdin.on('error', () => undefined); // espeak-ng exiting early must not crash us
        child.stdin.end(text.slice(0, MAX_TEXT_CHARS));
      });
    },
  };
}
