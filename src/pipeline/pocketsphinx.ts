/**
 * pocketsphinx as the fallback speech-to-text: the only engine with a real English model on a
 * fresh Debian install (apt pocketsphinx-en-us). Run once per utterance with a command grammar
 * (grammar.ts) and a dictionary of just its words: 0.08 s for a 3 s command, 16 MB. Spawned with an argument vector; the audio
 * goes through a private temporary WAV file, since the CLI reads only files.
 */
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { runChild } from './child.js';
import { commandGrammar, grammarWords } from './grammar.js';
import { SttError, type SpeechToText } from './stt.js';
import { encodeWav } from './wav.js';

export interface PocketsphinxOptions {
  /** Wake phrases the grammar allows before a command, e.g. ["hey jarvis"]. */
  wakePhrases: readonly string[];
  /** The program; default pocketsphinx_continuous on PATH. */
  command?: string;
  /** Pronunciation dictionary; default Debian's pocketsphinx-en-us one. */
  dictionary?: string;
}

export const DEFAULT_DICTIONARY = '/usr/share/pocketsphinx/model/en-us/cmudict-en-us.dict';

/** One pronunciation: "word P R O N" or "word(2) P R O N" (a variant). */
export interface DictionaryEntry {
  word: string;
  line: string;
}

/** The entries of a pocketsphinx dictionary for `words` (all their variants). */
export function dictionaryEntries(file: string, words: ReadonlySet<string>): DictionaryEntry[] {
  const entries: DictionaryEntry[] = [];
  for (const [line, word] of readFileSync(file, 'latin1').matchAll(/^(\S+?)(?:\(\d+\))?[ \t].*$/gm)) {
    if (word && words.has(word)) entries.push({ word, line });
  }
  return entries;
}

/**
 * The command grammar, and a dictionary of just its words. pocketsphinx refuses a grammar word
 * its dictionary lacks, so phrases with one are left out. The small dictionary matters: loading
 * the whole 126k-word one costs every utterance 0.15 s and 21 MB (a 3 s command: 0.23 s → 0.08 s).
 */
export function grammarAndDictionary(wakePhrases: readonly string[], dictionaryFile: string): { grammar: string; dictionary: string } {
  const entries = dictionaryEntries(dictionaryFile, grammarWords(commandGrammar({ wakePhrases })));
  const known = new Set(entries.map((entry) => entry.word));
  return {
    grammar: commandGrammar({ wakePhrases, knows: (word) => known.has(word) }),
    dictionary: `${entries.map((entry) => entry.line).join('\n')}\n`,
  };
}

export function createPocketsphinx(options: PocketsphinxOptions): SpeechToText {
  let dir: string | undefined;
  const prepare = async (): Promise<string> => {
    if (dir) return dir;
    const dictionary = options.dictionary ?? DEFAULT_DICTIONARY;
    if (!existsSync(dictionary)) {
      throw new SttError('stt_missing', `pocketsphinx's English model is missing (${dictionary}): apt install pocketsphinx pocketsphinx-en-us`);
    }
    const files = grammarAndDictionary(options.wakePhrases, dictionary);
    const work = await mkdtemp(path.join(os.tmpdir(), 'iris-stt-'));
    await writeFile(path.join(work, 'iris.gram'), files.grammar);
    await writeFile(path.join(work, 'iris.dict'), files.dictionary);
    return (dir = work);
  };
  let utterance = 0;
  return {
    name: 'pocketsphinx',
    async start() {
      await prepare();
    },
    async transcribe(samples, signal) {
      const work = await prepare();
      const wav = path.join(work, `utterance-${utterance++}.wav`);
      await writeFile(wav, encodeWav(samples));
      try {
        const { code, stdout, stderr } = await runChild(options.command ?? 'pocketsphinx_continuous', ['-infile', wav, '-jsgf', path.join(work, 'iris.gram'), '-dict', path.join(work, 'iris.dict'), '-logfn', '/dev/null'], {
          signal,
          missing: (cause) => new SttError('stt_missing', 'pocketsphinx is not installed (apt install pocketsphinx pocketsphinx-en-us)', { cause }),
        });
        if (code !== 0) throw new SttError('stt_failed', `pocketsphinx failed (exit ${code}): ${stderr.trim().split('\n').pop() ?? ''}`);
        return stdout.toString().split('\n').map((line) => line.trim()).filter(Boolean).join(' ').toLowerCase();
      } finally {
        await rm(wav, { force: true });
      }
    },
    async stop() {
      if (dir) await rm(dir, { recursive: true, force: true });
      dir = undefined;
    },
  };
}
