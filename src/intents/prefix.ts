/**
 * Where a partial transcript stands in the spoken templates: is it a whole command, and could
 * more words still follow? The voice loop ends a turn early only on a whole command that
 * nothing can extend ("remind me in an hour to call mom"); "what time is it" may still get
 * "in Tokyo" and "set a timer for ten" its unit, so those wait for the full silence.
 * Afterthoughts are not counted as a way on: "… minutes" + "and thirty seconds", "… four" +
 * "point five", "… eight" + "hundred" after a pause are rare (nobody pauses inside a number),
 * and counting them would make nearly every timer and sum wait the full silence (the
 * trade-off is in the README).
 * Walks the same template trees the grammar is written from, over the recogniser's words.
 */
import { spokenSentences, spokenSlot } from './spoken.js';
import type { Node } from './template.js';

export interface PrefixState {
  /** The words are one whole spoken sentence. */
  complete: boolean;
  /** Some sentence goes on after these words. */
  extendable: boolean;
}

/** Positions in `words` reachable after `node` starting at each of `from`; sets `more` when
 * the words ran out where the node still wanted one. */
function advance(node: Node, words: readonly string[], from: Set<number>, more: { value: boolean }): Set<number> {
  switch (node.type) {
    case 'word': {
      const out = new Set<number>();
      for (const i of from) {
        if (i === words.length) more.value ||= !AFTERTHOUGHTS.has(node.text);
        else if (words[i] === node.text) out.add(i + 1);
      }
      return out;
    }
    case 'slot': {
      const inner = spokenSlot(node.name);
      return inner === undefined ? new Set() : advance(inner, words, from, more);
    }
    case 'opt':
      return new Set([...from, ...advance(node.item, words, from, more)]);
    case 'seq':
      return node.items.reduce((at, item) => (at.size === 0 ? at : advance(item, words, at, more)), from);
    case 'alt': {
      const out = new Set<number>();
      for (const option of node.options) for (const i of advance(option, words, from, more)) out.add(i);
      return out;
    }
  }
}

/** Words that may open an afterthought on a whole command: not counted as a way on. */
const AFTERTHOUGHTS = new Set(['and', 'point', 'hundred']);


/** Where `text` (the recogniser's words, wake phrase already stripped) stands. */
export function prefixState(text: string): PrefixState {
  const words = text.toLowerCase().split(/\s+/).filter(Boolean);
  const state = { complete: false, extendable: false };
  if (words.length === 0) return { complete: false, extendable: true };
  for (const sentence of spokenSentences().intents.flatMap((intent) => intent.sentences)) {
    const more = { value: false };
    if (advance(sentence, words, new Set([0]), more).has(words.length)) state.complete = true;
    if (more.value) state.extendable = true;
  }
  return state;
}
