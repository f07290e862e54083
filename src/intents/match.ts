/**
 * The matcher: text (typed, or a transcript from either recogniser) → the intent its words
 * fit, with slot values. Text is normalised first (lower case, no punctuation, number words
 * as digits), then tried against every sentence template in order; the first that matches
 * the whole text wins. Skip words ("um", "please", "right now") may sit before, between and
 * after a template's words.
 */
import { INTENTS, SKIP, SLOTS, type IntentSpec } from './sentences.js';
import { parseTemplate, slotsOf, toRegex, type CompiledSentence, type Node } from './template.js';

export interface IntentMatch {
  intent: IntentSpec;
  slots: Record<string, string>;
  /** The tool's arguments (empty for intents without a tool). */
  args: Record<string, unknown>;
}

interface Compiled {
  intent: IntentSpec;
  sentences: CompiledSentence[];
}

const SKIP_SOURCE = SKIP.map((phrase) => `${phrase.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} `).join('|');

let compiled: Compiled[] | undefined;

const NUMBER_WORD = '(?:zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred|thousand|million)';
/** A run of number words: "twenty seven", "a hundred and five", "three point five". */
const NUMBER_RUN = new RegExp(`\\b(?:a (?=hundred|thousand))?${NUMBER_WORD}(?:[ -](?:and |point )?${NUMBER_WORD})*\\b`, 'g');

/** Every intent's sentences as parsed templates; `heard` only those the grammar has. */
export function parsedIntents(heard = false): { intent: IntentSpec; sentences: Node[] }[] {
  return INTENTS.map((intent) => ({ intent, sentences: [...intent.sentences, ...(heard ? [] : intent.typed ?? [])].map(parseTemplate) }));
}

function compile(): Compiled[] {
  return (compiled ??= parsedIntents().map(({ intent, sentences }) => ({
    intent,
    sentences: sentences.map((node) => {
      for (const slot of slotsOf(node)) if (SLOTS[slot] === undefined) throw new Error(`unknown slot {${slot}} in intent ${intent.name}`);
      return toRegex(node, { slotPattern: (name) => SLOTS[name]?.typed ?? '(?!)', skip: SKIP_SOURCE });
    }),
  })));
}

/** Lower case, punctuation out, number words as digits: the form the templates match. */
export async function normalise(utterance: string): Promise<string> {
  // Accents folded ("São Paulo" → "sao paulo", "Zürich" → "zurich"): the templates' words and
  // slots are ASCII, and the time tool knows every place by its folded name too.
  let text = utterance.normalize('NFKD').replace(/[\u0300-\u036f]/g, '').toLowerCase().replace(/[’‘]/g, "'").replace(/[“”"]/g, ' ');
  text = text
    .replace(/(\d),(\d{3})\b/g, '$1$2') // 2,340
    .replace(/[,;!?]+|\.(?!\d)|(?<![\w])'|'(?![\w])/g, ' ')
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/\bhalf an hour\b/g, '30 minutes')
    .replace(/\ban hour and a half\b/g, '90 minutes')
    .replace(/\b(?:a|an|one) (second|minute|hour|day)\b/g, '1 $1')
    .replace(/\ba quarter of an hour\b|\ba quarter hour\b/g, '15 minutes');
  const runs = [...text.matchAll(NUMBER_RUN)];
  if (runs.length > 0) {
    // Each run of number words alone: compromise reads numbers by their context, and a word
    // before ("uh fifteen") can stop it. "seconds" is a fraction to it unless told it is a noun.
    const { default: nlp } = await import('compromise');
    const digits = runs.map(([run]) => {
      const doc = nlp(run, { second: 'Singular', seconds: 'Plural' });
      doc.numbers().toNumber();
      return doc.text().trim();
    });
    let i = 0;
    text = text.replace(NUMBER_RUN, () => digits[i++] ?? '');
  }
  return text;
}

/** The intent `text` (already normalised) states, or undefined when no template fits it whole. */
export function matchNormalised(text: string, only?: (intent: IntentSpec) => boolean): IntentMatch | undefined {
  const words = `${text.replace(/[,.]+$/, '').trim()} `;
  for (const { intent, sentences } of compile()) {
    if (only !== undefined && !only(intent)) continue;
    for (const { regex, groups } of sentences) {
      const m = regex.exec(words);
      if (!m) continue;
      const slots: Record<string, string> = {};
      groups.forEach((name, i) => {
        const value = m[i + 1];
        if (value !== undefined && slots[name] === undefined) slots[name] = value.trim();
      });
      return { intent, slots, args: intent.args?.(slots) ?? {} };
    }
  }
  return undefined;
}

/** The intent `utterance` states (normalising it first). */
export async function matchIntent(utterance: string, only?: (intent: IntentSpec) => boolean): Promise<IntentMatch | undefined> {
  return matchNormalised(await normalise(utterance), only);
}

/**
 * Whether two transcripts ask for the same thing: the same intent with the same arguments
 * ("set a timer for twenty minute" and "… minutes"), or the same words when neither matches.
 */
export async function sameMeaning(a: string, b: string): Promise<boolean> {
  if (a === b) return true;
  const [x, y] = await Promise.all([matchIntent(a), matchIntent(b)]);
  if (x === undefined || y === undefined) return false;
  return x.intent.name === y.intent.name && JSON.stringify(x.args) === JSON.stringify(y.args);
}
