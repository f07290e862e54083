/**
 * Piper voices IRIS knows: a manifest pinning, per voice, the Hugging Face revision and each
 * file's size and SHA-256, and the licence of the data it was trained on — shown before the
 * download, because most English voices come from non-commercial datasets (notes/piper.md §5),
 * which is also why none ships in the .deb. `[tts] voice` may name one of these once fetched.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { fetchModel, type FetchedModel } from './models.js';

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

/** A `[tts] voice` for Piper as a file: a known name in the models dir, else the path as given. */
export function piperVoicePath(voice: string, modelsDir: string): string {
  return voice in PIPER_VOICES ? join(modelsDir, 'piper', `${voice}.onnx`) : voice;
}

/** Fetch a known voice's two files into `modelsDir/piper`, each checked against its pinned SHA-256. */
export async function fetchPiperVoice(
  name: string,
  modelsDir: string,
  options: { base?: string; voices?: Readonly<Record<string, PiperVoiceEntry>>; signal?: AbortSignal } = {},
): Promise<FetchedModel[]> {
  const entry = (options.voices ?? PIPER_VOICES)[name];
  if (entry === undefined) throw new Error(`no Piper voice "${name}" in IRIS's manifest (${Object.keys(options.voices ?? PIPER_VOICES).join(', ')})`);
  const base = options.base ?? piperBase();
  const dest = join(modelsDir, 'piper', `${name}.onnx`);
  // The config first: a voice is only usable with both, and the model is the big one.
  const files: [string, string, { sha256: string }][] = [
    [`${base}/${entry.revision}/${entry.path}.onnx.json`, `${dest}.json`, entry.json],
    [`${base}/${entry.revision}/${entry.path}.onnx`, dest, entry.onnx],
  ];
  const fetched: FetchedModel[] = [];
  try {
    for (const [url, path, pinned] of files) {
      fetched.push(await fetchModel({ url, sha256: pinned.sha256, dest: path, ...(options.signal ? { signal: options.signal } : {}) }));
    }
  } catch (error) {
    // Half a voice is no voice: what came before the failure goes too.
    await Promise.all(fetched.map((f) => rm(f.path, { force: true })));
    throw error;
  }
  return fetched;
}
