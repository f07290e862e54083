/**
 * Replies written for the ear: markdown, code, URLs and emoji removed, and the text cut into
 * complete sentences as it streams, so speech can start before the model has finished.
 */
import removeMarkdown from 'remove-markdown';

const FENCED_CODE = /```[\s\S]*?(?:```|$)/g;
const CLOSED_BLOCKS = /```[\s\S]*?```|<think>[\s\S]*?<\/think>/g;
const THINK_BLOCK = /<think>[\s\S]*?(?:<\/think>|$)/g;
const URL = /\b(?:https?:\/\/|www\.)[^\s)>\]]+/gi;
const EMOJI = /[\p{Extended_Pictographic}\p{Regional_Indicator}\u{FE0F}\u{200D}\u{20E3}\u{1F3FB}-\u{1F3FF}]/gu;

/** All of `text`, cut into speakable sentences. */
export function sentencesFor(text: string): string[] {
  const stream = new SentenceStream();
  return [...stream.push(text), ...stream.flush()];
}

/** Text as it should be spoken. */
export function speakable(text: string): string {
  const plain = removeMarkdown(text.replace(THINK_BLOCK, ' ').replace(FENCED_CODE, ' ').replace(URL, 'the link'), {
    stripListLeaders: true,
    gfm: true,
    useImgAltText: true,
  });
  return plain
    .replace(EMOJI, '')
    .replace(/`/g, '')
    .replace(/^\s*[-*•]\s+/gm, '')
    .replace(/\s*\n+\s*/g, ' ')
    .replace(/\s{2,}/g, ' ')
    .replace(/\s+([,.!?;:])/g, '$1')
    .trim();
}

const segmenter = new Intl.Segmenter('en', { granularity: 'sentence' });
/** ICU ends a sentence after these; a listener would not. */
const ABBREVIATION = /\b(?:Mr|Mrs|Ms|Dr|St|Prof|Sr|Jr|vs|etc|approx|e\.g|i\.e|No)\.\s*$/i;

function sentencesOf(text: string): string[] {
  const merged: string[] = [];
  for (const { segment } of segmenter.segment(text)) {
    const last = merged.length - 1;
    if (last >= 0 && ABBREVIATION.test(merged[last] ?? '')) merged[last] += segment;
    else merged.push(segment);
  }
  return merged;
}

/**
 * Feed text as it streams; get back the sentences that are complete. The last, possibly
 * unfinished one waits for more text or `flush()`. Fenced code is held until it closes and
 * then dropped.
 */
export class SentenceStream {
  #buffer = '';

  push(piece: string): string[] {
    // Drop what is never spoken before cutting sentences: ICU would split closed code blocks
    // at their newlines and bold markers after the "!" they follow.
    this.#buffer = (this.#buffer + piece).replace(CLOSED_BLOCKS, ' ').replace(/\*\*|__/g, '');
    const open = this.#openFence();
    const ready = open === -1 ? this.#buffer : this.#buffer.slice(0, open);
    const segments = sentencesOf(ready);
    // The last segment may still grow; so may one that does not end in a sentence mark.
    let complete = segments.length - 1;
    while (complete > 0 && !/[.!?…]["')\]]*\s*$/.test(segments[complete - 1] ?? '')) complete -= 1;
    if (complete <= 0) return [];
    const done = segments.slice(0, complete).join('');
    this.#buffer = this.#buffer.slice(done.length);
    return this.#speak(segments.slice(0, complete));
  }

  /** Characters not yet cut into sentences. */
  get length(): number {
    return this.#buffer.length;
  }

  /** Give up the text not yet cut into sentences (it is not spoken). */
  takeBuffer(): string {
    const rest = this.#buffer;
    this.#buffer = '';
    return rest;
  }

  /** The rest, at the end of the reply. */
  flush(): string[] {
    const rest = this.#buffer;
    this.#buffer = '';
    return this.#speak(sentencesOf(rest));
  }

  #openFence(): number {
    const fences = [...this.#buffer.matchAll(/```/g)];
    return fences.length % 2 === 1 ? (fences[fences.length - 1]?.index ?? -1) : -1;
  }

  #speak(segments: string[]): string[] {
    return segments.map(speakable).filter((s) => /[\p{L}\p{N}]/u.test(s));
  }
}
