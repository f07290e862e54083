/**
 * Piper voices IRIS knows: a manifest pinning, per voice, the Hugging Face revision and each
 * file's size and SHA-256, and the licence of the data it was trained on — shown before the
 * download, because most English voices come from non-commercial datasets (notes/piper.md §5),
 * which is also why none ships in the .deb. `[tts] voice` may name one of these once fetched.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { fetchModel, installModelFile, ownEntry, type FetchedModel, type Pinned } from './models.js';
import { SttError } from './stt.js';

export interface PiperVoiceEntry {
  /** The piper-voices repository's revision the checksums belong to. */
  revision: string;
  /** Path inside the repository, without the extension. */
  path: string;
  onnx: { bytes: number; sha256: string };
  json: { bytes: number; sha256: string };
  licence: string;
}

/**
 * SHA-256 values are the Hugging Face LFS object ids as several independent projects pin them
 * (notes/piper.md); the first real fetch re-verifies them. Only voices with both files pinned.
 */
export const PIPER_VOICES: Readonly<Record<string, PiperVoiceEntry>> = Object.freeze({
  'en_US-lessac-medium': {
    revision: 'v1.0.0',
    path: 'en/en_US/lessac/medium/en_US-lessac-medium',
    onnx: { bytes: 63_201_294, sha256: '5efe09e69902187827af646e1a6e9d269dee769f9877d17b16b1b46eeaaf019f' },
    json: { bytes: 4_885, sha256: 'efe19c417bed055f2d69908248c6ba650fa135bc868b0e6abb3da181dab690a0' },
    licence: 'Blizzard 2013 (Lessac) data: non-commercial use only — https://www.cstr.ed.ac.uk/projects/blizzard/2013/lessac_blizzard2013/license.html',
  },
});

/** Where voices come from: Hugging Face, or a mirror of the same layout (`$IRIS_PIPER_MIRROR`). */
export const piperBase = (env: NodeJS.ProcessEnv = process.env): string =>
  (env.IRIS_PIPER_MIRROR ?? 'https://huggingface.co/rhasspy/piper-voices/resolve').replace(/\/$/, '');

/** The manifest's entry for `name`: own keys only, so `__proto__` or `constructor` is no voice. */
export function piperVoice(name: string, voices: Readonly<Record<string, PiperVoiceEntry>> = PIPER_VOICES): PiperVoiceEntry | undefined {
  return ownEntry(voices, name);
}

/** A `[tts] voice` for Piper as a file: a known name in the models dir, else the path as given. */
export function piperVoicePath(voice: string, modelsDir: string): string {
  return piperVoice(voice) !== undefined ? join(modelsDir, 'piper', `${voice}.onnx`) : voice;
}

/** The two files of a voice, the config first: the URL each is downloaded from, where it goes, its pinned size and SHA-256. */
export function piperFiles(name: string, entry: PiperVoiceEntry, modelsDir: string, base = piperBase()): { url: string; dest: string; pinned: Pinned }[] {
  const dest = join(modelsDir, 'piper', `${name}.onnx`);
  // The config first: a voice is only usable with both, and the model is the big one.
  return [
    { url: `${base}/${entry.revision}/${entry.path}.onnx.json`, dest: `${dest}.json`, pinned: entry.json },
    { url: `${base}/${entry.revision}/${entry.path}.onnx`, dest, pinned: entry.onnx },
  ];
}

export interface FetchPiperOptions {
  /** The mirror's base URL (default: `piperBase()`). */
  base?: string;
  /** The manifest (default: PIPER_VOICES). */
  voices?: Readonly<Record<string, PiperVoiceEntry>>;
  signal?: AbortSignal;
  /** Give up on a download when no byte has arrived for this long (ms; default 30 s). */
  stallTimeoutMs?: number;
  /** Install from this copy of the voice's .onnx (its .onnx.json beside it) instead of downloading. */
  from?: string;
}

/**
 * Fetch a known voice's two files into `modelsDir/piper`, each checked against its pinned size
 * and SHA-256 — downloaded, or from a copy fetched elsewhere (`from`).
 */
export async function fetchPiperVoice(name: string, modelsDir: string, options: FetchPiperOptions = {}): Promise<FetchedModel[]> {
  const voices = options.voices ?? PIPER_VOICES;
  const entry = piperVoice(name, voices);
  if (entry === undefined) throw new SttError('model_unknown', `no Piper voice "${name}" in IRIS's manifest (${Object.keys(voices).join(', ')})`);
  const { signal, stallTimeoutMs, from } = options;
  const fetched: FetchedModel[] = [];
  try {
    for (const { url, dest, pinned } of piperFiles(name, entry, modelsDir, options.base)) {
      const common = { ...pinned, dest, ...(signal ? { signal } : {}) };
      fetched.push(from === undefined
        ? await fetchModel({ ...common, url, ...(stallTimeoutMs !== undefined ? { stallTimeoutMs } : {}) })
        : await installModelFile({ ...common, from: dest.endsWith('.json') ? `${from}.json` : from }));
    }
  } catch (error) {
    // Half a voice is no voice: what came before the failure goes too.
    await Promise.all(fetched.map((f) => rm(f.path, { force: true })));
    throw error;
  }
  return fetched;
}
