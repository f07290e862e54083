/**
 * The command grammar for pocketsphinx (JSGF), generated from the sentence templates
 * (intents/sentences.ts) that the local path's matcher also uses: what can be heard is what
 * can be understood. pocketsphinx with a general language model gets 87 % of espeak's words
 * wrong; with a command grammar 5.7 % (notes/speech.md §5). A word the pronunciation
 * dictionary lacks drops its branch, since pocketsphinx refuses a grammar with unknown words.
 */
import { SPOKEN_LEAD, SPOKEN_TAIL } from '../intents/sentences.js';
import { spokenSentences, spokenSlot } from '../intents/spoken.js';
import { toJsgf, wordsOf, type Node } from '../intents/template.js';
import { dictionaryEntries, type DictionaryEntry } from './pocketsphinx-model.js';

export interface GrammarOptions {
  /** Wake phrases allowed before a command ("hey jarvis"), since the audio handed over
   * starts where the wake phrase does. */
  wakePhrases: readonly string[];
  /** Words the recogniser can pronounce; branches with other words are left out. */
  knows?: (word: string) => boolean;
}

const rule = (name: string): string => name.replace(/[^a-z0-9_]/gi, '_');

export function commandGrammar(options: GrammarOptions): string {
  const knows = options.knows ?? (() => true);
  const { intents, slots } = spokenSentences();
  const words = (items: readonly string[]) => items.filter((item) => item.split(' ').every(knows));
  const wake = words(options.wakePhrases.map((w) => w.replace(/_/g, ' ')));
  const lead = words(SPOKEN_LEAD);
  const tail = words(SPOKEN_TAIL);
  const rules: string[] = [];
  const commands: string[] = [];
  for (const intent of intents) {
    const bodies = intent.sentences.map((node) => toJsgf(node, knows)).filter((b): b is string => b !== undefined && b !== '');
    if (bodies.length === 0) continue;
    commands.push(`<${rule(intent.name)}>`);
    rules.push(`<${rule(intent.name)}> = ${bodies.join(' | ')};`);
  }
  for (const slot of slots) {
    const body = toJsgf(spokenSlot(slot) as Node, knows);
    rules.push(`<${rule(slot)}> = ${body ?? '<VOID>'};`);
  }
  const optional = (items: string[]) => (items.length ? `[ ( ${items.join(' | ')} ) ] ` : '');
  const lines = ['#JSGF V1.0;', 'grammar iris;'];
  lines.push(`public <utterance> = ${optional(wake)}${optional(lead)}( ${commands.join(' | ')} ) ${optional(tail)};`.replace(/ ;$/, ';'));
  return `${[...lines, ...rules].join('\n')}\n`;
}

/** Every word the grammar could use, before the dictionary is consulted. */
export function grammarWords(wakePhrases: readonly string[]): Set<string> {
  const { intents, slots } = spokenSentences();
  const words = new Set<string>([...wakePhrases, ...SPOKEN_LEAD, ...SPOKEN_TAIL].flatMap((w) => w.replace(/_/g, ' ').split(' ')));
  for (const intent of intents) intent.sentences.forEach((node) => wordsOf(node, words));
  for (const slot of slots) wordsOf(spokenSlot(slot) as Node, words);
  return words;
}

/**
 * The command grammar, and a dictionary of just its words. pocketsphinx refuses a grammar word
 * its dictionary lacks, so branches with one are left out. The small dictionary matters:
 * loading the whole 126k-word one costs 0.15 s and 21 MB.
 */
export function grammarAndDictionary(wakePhrases: readonly string[], dictionaryFile: string): { grammar: string; entries: DictionaryEntry[]; dictionary: string; known: ReadonlySet<string> } {
  const entries = dictionaryEntries(dictionaryFile, grammarWords(wakePhrases));
  const known = new Set(entries.map((entry) => entry.word));
  return {
    grammar: commandGrammar({ wakePhrases, knows: (word) => known.has(word) }),
    entries,
    dictionary: `${entries.map((entry) => entry.line).join('\n')}\n`,
    known,
  };
}
