/**
 * The spoken side of the templates, parsed once: the sentences a recogniser can hear (every
 * slot they use has a spoken form, recursively) and each slot's spoken template. The grammar
 * (pipeline/grammar.ts) is written from these, and the prefix walk (prefix.ts) reads the same.
 */
import { parsedIntents } from './match.js';
import { SLOTS } from './sentences.js';
import { parseTemplate, slotsOf, type Node } from './template.js';

const slotNodes = new Map<string, Node | undefined>();

/** A slot's spoken template, parsed; undefined for a slot that is typed only ({id}). */
export function spokenSlot(name: string): Node | undefined {
  if (!slotNodes.has(name)) {
    const spoken = SLOTS[name]?.spoken;
    slotNodes.set(name, spoken === undefined ? undefined : parseTemplate(spoken));
  }
  return slotNodes.get(name);
}

/** The slots `node` needs, recursively, or undefined when one of them cannot be spoken. */
function spokenSlots(node: Node, into = new Set<string>()): Set<string> | undefined {
  for (const slot of slotsOf(node)) {
    if (into.has(slot)) continue;
    const inner = spokenSlot(slot);
    if (inner === undefined) return undefined;
    into.add(slot);
    if (spokenSlots(inner, into) === undefined) return undefined;
  }
  return into;
}

export interface SpokenSentences {
  /** Intents with at least one sentence that can be spoken, and those sentences. */
  intents: { name: string; sentences: Node[] }[];
  /** Every slot those sentences use, nested ones included. */
  slots: Set<string>;
}

let spoken: SpokenSentences | undefined;

/** Every sentence that can be spoken, by intent, and the slots they use. */
export function spokenSentences(): SpokenSentences {
  if (spoken) return spoken;
  const slots = new Set<string>();
  const intents = parsedIntents(true).map(({ intent, sentences }) => ({
    name: intent.name,
    sentences: sentences.filter((node) => {
      const used = spokenSlots(node);
      used?.forEach((slot) => slots.add(slot));
      return used !== undefined;
    }),
  }));
  return (spoken = { intents: intents.filter((intent) => intent.sentences.length > 0), slots });
}
