/**
 * pocketsphinx as the fallback speech-to-text: the only engine with a real English model on a
 * fresh Debian install (apt pocketsphinx-en-us). Run once per utterance with a command grammar
 * (grammar.ts): 0.28 s for a 2.4 s command, 37 MB. Spawned with an argument vector; the audio
 * goes through a private temporary WAV file, since the CLI reads only files.
 */
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { runChild } from './child.js';
import { commandGrammar } from './grammar.js';
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

/** The words a pocketsphinx dictionary can pronounce ("word" and "word(2)" entries): all of
 * them, or only those `among` a few candidates. The daemon asks for candidates: the whole
 * 126k-word dictionary as a Set adds 32 MB to the daemon's peak RSS. */
export function dictionaryWords(file: string, among?: ReadonlySet<string>): Set<string> {
  const words = new Set<string>();
  for (const [, word] of readFileSync(file, 'latin1').matchAll(/^(\S+?)(?:\(\d+\))? /gm)) {
    if (word && (!among || among.has(word))) words.add(word);
  }
  return words;
}

/** The grammar with only the words `dictionary` can pronounce (pocketsphinx refuses others). */
function pronounceableGrammar(wakePhrases: readonly string[], dictionary: string): string {
  const candidates = new Set<string>();
  commandGrammar({ wakePhrases, knows: (word) => candidates.add(word).has(word) });
  const words = dictionaryWords(dictionary, candidates);
  return commandGrammar({ wakePhrases, knows: (word) => words.has(word) });
}

export function createPocketsphinx(options: PocketsphinxOptions): SpeechToText {
  let dir: string | undefined;
  let grammarFile: string | undefined;
  const prepare = async (): Promise<{ dir: string; grammar: string }> => {
    if (dir && grammarFile) return { dir, grammar: grammarFile };
    const dictionary = options.dictionary ?? DEFAULT_DICTIONARY;
    if (!existsSync(dictionary)) {
      throw new SttError('stt_missing', `pocketsphinx's English model is missing (${dictionary}): apt install pocketsphinx pocketsphinx-en-us`);
    }
    const grammar = pronounceableGrammar(options.wakePhrases, dictionary);
    dir = await mkdtemp(path.join(os.tmpdir(), 'iris-stt-'));
    grammarFile = path.join(dir, 'iris.gram');
    await writeFile(grammarFile, grammar);
    return { dir, grammar: grammarFile };
  };
  let utterance = 0;
  return {
    name: 'pocketsphinx',
    async start() {
      await prepare();
    },
    async transcribe(samples, signal) {
      const { dir: work, grammar } = await prepare();
      const wav = path.join(work, `utterance-${utterance++}.wav`);
      await writeFile(wav, encodeWav(samples));
      try {
        const { code, stdout, stderr } = await runChild(options.command ?? 'pocketsphinx_continuous', ['-infile', wav, '-jsgf', grammar, '-logfn', '/dev/null'], {
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
      dir = grammarFile = undefined;
    },
  };
}
