/**
 * Debian's English model for pocketsphinx (apt pocketsphinx-en-us) and the small dictionaries
 * made from it: the recogniser (pocketsphinx.ts) and the stop-word spotter (stopword.ts) both
 * check the model is there and hand the decoder a dictionary of just their words, written to
 * a temporary file that pocketsphinx reads once, at init.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SttError } from './stt.js';

export const MODEL_DIR = '/usr/share/pocketsphinx/model/en-us';
export const DEFAULT_DICTIONARY = `${MODEL_DIR}/cmudict-en-us.dict`;
/** The acoustic model directory inside `MODEL_DIR`. */
export const DEFAULT_MODEL = `${MODEL_DIR}/en-us`;

/** One pronunciation: "word P R O N" or "word(2) P R O N" (a variant). */
export interface DictionaryEntry {
  word: string;
  line: string;
}

/**
 * The entries of a pocketsphinx dictionary for `words` (all their variants). The file (126k
 * lines, 3.2 MB) is searched for just those words: a match object per line cost ~12 MB of
 * garbage at start, twice (the recogniser and the stop word).
 */
export function dictionaryEntries(file: string, words: ReadonlySet<string>): DictionaryEntry[] {
  if (words.size === 0) return [];
  const escaped = [...words].map((word) => word.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  const lines = new RegExp(`^(${escaped.join('|')})(?:\\(\\d+\\))?[ \\t].*$`, 'gm');
  return [...readFileSync(file, 'latin1').matchAll(lines)].map(([line, word]) => ({ word: word ?? '', line }));
}

/** Throws `stt_missing` naming the package when the acoustic model or the dictionary is absent. */
export function checkModel(model = DEFAULT_MODEL, dictionary = DEFAULT_DICTIONARY): void {
  if (!existsSync(dictionary) || !existsSync(model)) throw new SttError('stt_missing', `pocketsphinx's English model is missing (${existsSync(model) ? dictionary : model}): apt install pocketsphinx-en-us`);
}

/**
 * Runs `use` with the path of a temporary dictionary file holding `entries`, removed after:
 * pocketsphinx reads it while `use` makes the decoders, and never again. Synchronous: the stop
 * word's spotters are made on the audio path, the moment something starts to play (the file
 * is a few lines).
 */
export function withDictionary<T>(entries: readonly DictionaryEntry[], use: (file: string) => T): T {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'iris-sphinx-'));
  try {
    const file = path.join(dir, 'words.dict');
    writeFileSync(file, `${entries.map((entry) => entry.line).join('\n')}\n`);
    return use(file);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
