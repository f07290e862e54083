/**
 * Speech fixtures made at test time: espeak-ng in a chosen voice and speed, resampled to
 * 16 kHz mono by sox with dithering off (-D), so the same text gives the same samples every
 * run. Plus sox's statistics, to tell speech from silence.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { concatSamples } from '../../src/pipeline/audio.js';
import { decodeWav } from '../../src/pipeline/wav.js';
import { speakToWav, type SpeechOptions } from '../../scripts/lib/speech.js';
import { synthesize } from '../../scripts/lib/speech-set.js';

export type { SpeechOptions };

const DIR = join(tmpdir(), `iris-speech-${process.pid}`);

/** A 16 kHz mono WAV of `text` (cached per process); returns its path. */
export function speechWav(text: string, options: SpeechOptions = {}): string {
  const { voice = 'en-us', wpm = 175, padS = [0.5, 1.5] } = options;
  mkdirSync(DIR, { recursive: true });
  const name = `${voice}-${wpm}-${padS.join('-')}-${text.replace(/[^a-z0-9]+/gi, '_')}`.slice(0, 200);
  const out = join(DIR, `${name}.wav`);
  if (!existsSync(out)) {
    speakToWav(text, out, join(DIR, `${name}.raw.wav`), { voice, wpm, padS });
  }
  return out;
}

/** Where clips from scripts/lib/speech-set.ts are kept for this process. */
export function clipDir(): string {
  const dir = join(DIR, 'clips');
  mkdirSync(dir, { recursive: true });
  return dir;
}

/**
 * A spoken command in a flite voice (rms unless told), trimmed, with silence around it:
 * pocketsphinx hears flite's voices with confidence and espeak-ng's almost never (README,
 * "Understanding what was said"), so tests of what happens after a command is understood
 * speak it with flite.
 */
export function commandWav(text: string, options: { voice?: string; padS?: [number, number] } = {}): string {
  const { voice = 'rms', padS = [0.5, 1.5] } = options;
  mkdirSync(DIR, { recursive: true });
  const name = `flite-${voice}-${padS.join('-')}-${text.replace(/[^a-z0-9]+/gi, '_')}`.slice(0, 200);
  const out = join(DIR, `${name}.wav`);
  if (!existsSync(out)) {
    const bare = join(DIR, `${name}.bare.wav`);
    synthesize(text, { synth: 'flite', name: voice }, bare);
    execFileSync('sox', ['-D', bare, out, 'pad', String(padS[0]), String(padS[1])]);
  }
  return out;
}

export const commandSamples = (text: string, options?: { voice?: string; padS?: [number, number] }): Int16Array =>
  decodeWav(readFileSync(commandWav(text, options)));

/** Samples of a speech fixture. */
export const speechSamples = (text: string, options?: SpeechOptions): Int16Array => decodeWav(readFileSync(speechWav(text, options)));

/** Real human speech from Debian's pocketsphinx-testdata, as 16 kHz WAV paths. */
export function humanSpeech(): string[] {
  const data = '/usr/share/pocketsphinx/test/data';
  const clips = ['0870', '0880', '0890', '0920', '0930'].map((n) => `${data}/librivox/sense_and_sensibility_01_austen_64kb-${n}.wav`);
  mkdirSync(DIR, { recursive: true });
  const goforward = join(DIR, 'goforward.wav');
  if (!existsSync(goforward)) execFileSync('sox', ['-t', 'raw', '-r', '16000', '-e', 'signed', '-b', '16', '-c', '1', `${data}/goforward.raw`, goforward]);
  return [...clips, goforward, ...[1, 2, 3].map((n) => `${data}/cards/00${n}.wav`)];
}

/** sox's `stat` of a WAV file (it reports on stderr): length in seconds and RMS amplitude. */
export function soxStat(path: string): { length: number; rms: number } {
  const text = spawnSync('sox', [path, '-n', 'stat'], { encoding: 'utf8' }).stderr;
  const number = (label: string) => Number(new RegExp(`${label}:\\s+([\\d.]+)`).exec(text)?.[1] ?? NaN);
  return { length: number('Length \\(seconds\\)'), rms: number('RMS\\s+amplitude') };
}

/** The sum of squares of `samples` (for dB ratios). */
export const energy = (samples: Int16Array): number => samples.reduce((sum, v) => sum + v * v, 0);

/** IRIS's earlier reply and the current one, back to back (a canceller learns on the first). */
export function twoReplies(): Int16Array {
  const first = speechSamples('The weather today is sunny with a high of twenty two degrees. Tomorrow brings some clouds and a chance of rain.', { padS: [0.3, 0.2] });
  const second = speechSamples('Your timer for ten minutes is set. I will let you know when it is done. Anything else I can help you with today?', { padS: [0.2, 0.5] });
  const both = new Int16Array(first.length + second.length);
  both.set(first);
  both.set(second, first.length);
  return both;
}

/** Mean power of `samples`' 10 ms frames within 30 dB of the loudest: speech, not the silence around it. */
function speechPower(samples: Int16Array): number {
  const frames: number[] = [];
  for (let i = 0; i + 160 <= samples.length; i += 160) frames.push(energy(samples.subarray(i, i + 160)) / 160);
  const loudest = Math.max(...frames, 1);
  const speech = frames.filter((p) => p > loudest / 1000);
  return speech.reduce((a, b) => a + b, 0) / Math.max(1, speech.length);
}

/**
 * `samples` with a person reading aloud behind them, `snrDb` quieter (speech power to speech
 * power), from the first sample to the last: the LibriVox recordings of pocketsphinx-testdata,
 * two readers at once, as scripts/bench-room.ts's babble rooms.
 */
export function withBabble(samples: Int16Array, snrDb: number): Int16Array {
  const one = concatSamples(humanSpeech().slice(0, 5).map((path) => decodeWav(readFileSync(path))));
  const babble = Int16Array.from(one, (v, i) => Math.round((v + (one[(i + (one.length >> 1)) % one.length] ?? 0)) / 2));
  const gain = Math.sqrt(speechPower(samples) / 10 ** (snrDb / 10) / speechPower(babble));
  return Int16Array.from(samples, (v, i) => Math.max(-32768, Math.min(32767, Math.round(v + (babble[i % babble.length] ?? 0) * gain))));
}
