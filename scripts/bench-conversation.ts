/**
 * Benchmark of the conversation engine against the Ollama test double on loopback:
 * IRIS's own cost per turn beyond the HTTP round trip (instant model), the cost of fitting a
 * 50-round history into the budget, and how close the token estimate is to the count the
 * model reports. Prints figures and writes scripts/results/conversation.json.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ollama, type Message, type Tool } from 'ollama';
import { fitToBudget } from '../src/budget/fit.js';
import { loadTokenizer } from '../src/budget/tokenizer.js';
import { parseConfig } from '../src/config/load.js';
import type { ChatMessage } from '../src/conversation/backend.js';
import { assemble } from '../src/daemon/assemble.js';
import { silentLogger } from '../src/log.js';
import { OllamaDouble } from '../test/helpers/ollama-double.js';
import { round, timeMs, writeResults } from './lib/bench.js';

const round2 = (x: number) => round(x, 2);

const state = mkdtempSync(join(tmpdir(), 'iris-bench-'));
const double = await new OllamaDouble().start();
const config = parseConfig(`[ollama]\nurl = "${double.url}"\n[assistant]\ntimezone = "UTC"\n`, 'bench');
const iris = assemble(config, { stateDir: state, log: silentLogger });
const tokenizer = await loadTokenizer();


// 1. Per-turn cost with an instant model: IRIS's turn vs the bare client sending the same request.
const N = 200;
double.script(...Array.from({ length: N + 20 }, () => ({ content: ['Sure, done.'] })));
const irisTurn = await timeMs(N, async () => (await iris.conversation().turn('tell me something nice').result), 20);
const sent = double.chats.at(-1);
const client = new Ollama({ host: double.url });
double.script(...Array.from({ length: N + 20 }, () => ({ content: ['Sure, done.'] })));
const bare = await timeMs(N, async () => {
  const stream = await client.chat({ model: 'qwen2.5:7b', messages: (sent?.messages ?? []) as Message[], tools: (sent?.tools ?? []) as Tool[], stream: true, options: sent?.options ?? {} });
  for await (const _chunk of stream) { /* drain */ }
}, 20);
const perTurn = { iris_p50_ms: irisTurn.p50, iris_p90_ms: irisTurn.p90, bare_client_p50_ms: bare.p50, overhead_p50_ms: round2(irisTurn.p50 - bare.p50) };

// 2. Fitting a 50-round history (each round: question, tool call, tool result, answer).
const history: ChatMessage[][] = Array.from({ length: 50 }, (_v, i) => [
  { role: 'user', content: `Question ${i}: what is ${i} times ${i + 1}, and is that a lot for a Tuesday?` },
  { role: 'assistant', content: '', tool_calls: [{ name: 'calculator', arguments: { expression: `${i}*${i + 1}` } }] },
  { role: 'tool', content: String(i * (i + 1)), tool_name: 'calculator' },
  { role: 'assistant', content: `It is ${i * (i + 1)}. For a Tuesday that is a perfectly reasonable amount.` },
]);
const definitions = iris.host.definitions().map((t) => ({ type: 'function' as const, function: { name: t.name, description: t.description, parameters: t.inputSchema } }));
const fitArgs = (count: (t: string) => number) => ({
  system: { role: 'system' as const, content: 'You are IRIS, a voice assistant.' },
  tools: definitions, history, current: [{ role: 'user' as const, content: 'and now?' }], promptBudget: 7680, toolBudget: 1500, count,
});
const cache = new Map<string, number>();
const cached = (text: string) => cache.get(text) ?? cache.set(text, tokenizer.count(text)).get(text) ?? 0;
let salt = 0; // defeats the tokenizer's memo: every round counted afresh
const fitCold = await timeMs(50, () => Promise.resolve(fitToBudget(fitArgs((t) => tokenizer.count(`${t}${(salt += 1)}`)))), 5);
const fitCached = await timeMs(500, () => Promise.resolve(fitToBudget(fitArgs(cached))));
const fitted = fitToBudget(fitArgs(cached));
const budgetFit = { rounds: 50, kept_rounds: 50 - fitted.droppedRounds, tokenizing_p50_ms: fitCold.p50, memoised_counts_p50_ms: fitCached.p50 };

// 3. Token estimate vs the model's prompt_eval_count, over growing conversations.
const errors: { first: number[]; calibrated: number[] } = { first: [], calibrated: [] };
for (let c = 0; c < 5; c++) {
  const conversation = iris.conversation();
  for (let turn = 0; turn < 6; turn++) {
    double.script(turn % 2 === 0
      ? { content: [`Answer ${turn}: ${'a fairly ordinary sentence about the weather and the garden. '.repeat(1 + c)}`] }
      : { content: ['Short.'] });
    const result = await conversation.turn(`Turn ${turn} of ${c}: ${'tell me more about gardens, please. '.repeat(1 + turn)}`).result;
    if (result.tokens.prompt_eval_count === 0) throw new Error(`no prompt_eval_count: ${JSON.stringify(result)}`);
    const error = Math.abs(result.tokens.prompt_estimate / result.tokens.prompt_eval_count - 1);
    (turn === 0 ? errors.first : errors.calibrated).push(error);
  }
}
const pct = (xs: number[]) => round2(100 * xs.reduce((a, b) => a + b, 0) / xs.length);
const pctMax = (xs: number[]) => round2(100 * Math.max(...xs));
const estimate = {
  first_turn_mean_error_pct: pct(errors.first), first_turn_max_error_pct: pctMax(errors.first),
  calibrated_mean_error_pct: pct(errors.calibrated), calibrated_max_error_pct: pctMax(errors.calibrated),
};

await double.close();
rmSync(state, { recursive: true, force: true });

console.log(`turn with an instant model (${N} turns): IRIS p50 ${perTurn.iris_p50_ms} ms, bare client p50 ${perTurn.bare_client_p50_ms} ms → IRIS's own cost ${perTurn.overhead_p50_ms} ms per turn`);
console.log(`fitting a 50-round history: ${budgetFit.tokenizing_p50_ms} ms tokenizing every message, ${budgetFit.memoised_counts_p50_ms} ms with memoised counts (${budgetFit.kept_rounds} rounds kept)`);
console.log(`token estimate vs prompt_eval_count: first turn mean ${estimate.first_turn_mean_error_pct}% (max ${estimate.first_turn_max_error_pct}%), calibrated mean ${estimate.calibrated_mean_error_pct}% (max ${estimate.calibrated_max_error_pct}%)`);
writeResults('conversation', { per_turn: perTurn, budget_fit: budgetFit, token_estimate: estimate });
