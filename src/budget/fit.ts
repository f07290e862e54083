/**
 * The token budget, as pure functions: estimate what a chat request costs and fit it into the
 * context. Tool definitions stay under their own budget (lowest priority dropped first, and
 * said so); history keeps the newest whole rounds that fit, so a tool call never loses its
 * result; the system prompt and the current round always stay.
 */
import type { ChatMessage, ModelTool } from '../conversation/backend.js';

/** Tokens the chat template adds around each message (`<|im_start|>role\n … <|im_end|>\n`). */
export const MESSAGE_OVERHEAD = 5;
/** Tokens around each tool call or tool result (`<tool_call>\n … \n</tool_call>`). */
export const TOOL_WRAP_OVERHEAD = 6;
/** Tokens of the template's fixed text introducing the tools (Qwen2.5's, measured). */
export const TOOLS_PREAMBLE_TOKENS = 100;

export type Count = (text: string) => number;

export function messageTokens(message: ChatMessage, count: Count): number {
  let tokens = MESSAGE_OVERHEAD + count(message.content);
  for (const call of message.tool_calls ?? []) {
    const args = typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments);
    tokens += TOOL_WRAP_OVERHEAD + count(`{"name": "${call.name}", "arguments": ${args}}`);
  }
  if (message.role === 'tool') tokens += TOOL_WRAP_OVERHEAD;
  return tokens;
}

export function toolsTokens(tools: readonly ModelTool[], count: Count): number {
  if (tools.length === 0) return 0;
  return TOOLS_PREAMBLE_TOKENS + tools.reduce((sum, tool) => sum + count(JSON.stringify(tool)) + 1, 0);
}

/**
 * The `extra` tools (best first) that fit beside `base` under `budget` tokens: each is taken
 * when it still fits, so one large schema does not keep out the smaller ones after it.
 */
export function toolsThatFit(base: readonly ModelTool[], extra: readonly ModelTool[], budget: number, count: Count): ModelTool[] {
  const kept: ModelTool[] = [];
  let used = toolsTokens(base, count);
  for (const tool of extra) {
    const cost = base.length + kept.length === 0 ? toolsTokens([tool], count) : count(JSON.stringify(tool)) + 1;
    if (used + cost > budget) continue;
    kept.push(tool);
    used += cost;
  }
  return kept;
}

export interface BudgetRequest {
  system: ChatMessage;
  /** In priority order: the last ones are dropped first when over `toolBudget`. */
  tools: readonly ModelTool[];
  /** Earlier rounds, oldest first; a round is a user message and everything that answered it. */
  history: readonly (readonly ChatMessage[])[];
  /** The round in progress: the user's message, then any tool calls and results so far. */
  current: readonly ChatMessage[];
  /** context_tokens − reply_tokens. */
  promptBudget: number;
  toolBudget: number;
  count: Count;
}

export interface TokenFigures {
  system: number;
  tools: number;
  history: number;
  tool_results: number;
  prompt_estimate: number;
}

export interface Fitted {
  messages: ChatMessage[];
  tools: ModelTool[];
  droppedTools: string[];
  droppedRounds: number;
  tokens: TokenFigures;
  /** True when even the system prompt, tools and current round exceed the budget. */
  overBudget: boolean;
}

/** Choose what is sent. Pure: the same request always gives the same answer. */
export function fitToBudget(request: BudgetRequest): Fitted {
  const { count } = request;
  const tools = [...request.tools];
  const droppedTools: string[] = [];
  while (tools.length > 0 && toolsTokens(tools, count) > request.toolBudget) {
    droppedTools.unshift(tools.pop()?.function.name ?? '');
  }
  const systemTokens = messageTokens(request.system, count);
  const toolTokens = toolsTokens(tools, count);
  const sum = (messages: readonly ChatMessage[]) => messages.reduce((s, m) => s + messageTokens(m, count), 0);
  let used = systemTokens + toolTokens + sum(request.current);
  const kept: (readonly ChatMessage[])[] = [];
  let droppedRounds = 0;
  for (let i = request.history.length - 1; i >= 0; i--) {
    const round = request.history[i] ?? [];
    const cost = sum(round);
    if (droppedRounds === 0 && used + cost <= request.promptBudget) {
      kept.unshift(round);
      used += cost;
    } else {
      droppedRounds += 1; // once one round is dropped, every older one goes too
    }
  }
  const conversation = [...kept.flat(), ...request.current];
  const toolResults = sum(conversation.filter((m) => m.role === 'tool'));
  return {
    messages: [request.system, ...conversation],
    tools,
    droppedTools,
    droppedRounds,
    tokens: {
      system: systemTokens,
      tools: toolTokens,
      history: sum(conversation) - toolResults,
      tool_results: toolResults,
      prompt_estimate: used,
    },
    overBudget: used > request.promptBudget,
  };
}

/** Cut a tool result to `maxChars`, saying how much was left out. */
export function cutToolResult(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  return `${text.slice(0, maxChars)}\n[… cut: ${text.length - maxChars} more characters]`;
}
