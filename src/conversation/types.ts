/**
 * The conversation's shared shapes: what a turn returns, what it is built from, and a call
 * waiting for the person's yes. Imported by the engine and the model loop alike, so neither
 * imports the other's module for its types.
 */
import type { TokenFigures } from '../budget/fit.js';
import type { Tokenizer } from '../budget/tokenizer.js';
import type { Config } from '../config/schema.js';
import type { Logger } from '../log.js';
import type { PendingCall, ToolDefinition } from '../toolhost/api.js';
import type { ToolHost } from '../toolhost/host.js';
import type { ChatBackend, ChatMessage } from './backend.js';
import type { AskingCall } from './asking.js';
import type { ToolCallRecord } from './local.js';
import type { RepairKind } from './repair.js';

export type Route = 'llm' | 'local' | 'fallback';

export interface TurnResult {
  reply: string;
  route: Route;
  tool_calls: ToolCallRecord[];
  tokens: TokenFigures & { prompt_eval_count: number; budget: number; num_ctx: number };
  timings_ms: { total: number; first_token: number };
  /** Small-model repairs made in this turn, by kind. */
  repairs: Partial<Record<RepairKind, number>>;
  /** Set when the model path failed: what went wrong, in one line. */
  error?: { code: string; message: string };
  /** Set when the reply is a question before a call: the call, and until when a yes runs it. */
  confirm?: { tool: string; expires_at: string };
  /** Set when the reply is a running tool's question (MCP elicitation): who asks, and until when the answer is taken. */
  question?: { server: string; expires_at: string };
  /** The daemon's id for this client's conversation (`iris ask --conversation`). */
  conversation?: string;
}

export interface Turn {
  /** Complete, speakable sentences as soon as they exist. */
  sentences: AsyncIterable<string>;
  /** Rejects only when the turn was cancelled (with the abort reason). */
  result: Promise<TurnResult>;
  /**
   * Take the turn back: what it remembered is dropped from the history, now or when it would
   * be remembered (an early answer the person talked over: the voice loop answers the whole
   * command instead).
   */
  takeBack(): void;
}

export interface ConversationOptions {
  config: Config;
  backend: ChatBackend;
  /** Every tool call goes through it, confirmations included. */
  host: ToolHost;
  /**
   * The remote tools most likely meant by these words, best first, named "server.tool" with
   * their full schemas (the MCP proxy's ranking, `[tools] expose_max` of them), after the
   * `recent` ones (paths the previous round called); the model loop offers those that fit the
   * tool budget. Absent: only the meta-tools.
   */
  likelyTools?: (words: string, recent: readonly string[]) => ToolDefinition[];
  /** Loaded on the first model turn (the local path does not need it). */
  tokenizer: () => Promise<Tokenizer>;
  log: Logger;
  /** Epoch ms; default Date.now. */
  now?: () => number;
  /** Where the person is, for a room's conversation: tools learn the room, the model its area. */
  place?: Place;
}

/** A satellite's room: its name (timers are said there) and its area, read at use (a reload may change it). */
export interface Place {
  room: string;
  area: () => string;
}

/** How a turn's text came in: spoken ones carry the recogniser's confidence. */
export interface TurnInput {
  /** 0–1, for spoken text; typed text has none. */
  confidence?: number;
  /** The words were heard, not typed; default: when they come with a confidence. Another
   * recogniser's words (Home Assistant's) are heard, though with no confidence. */
  heard?: boolean;
  /**
   * Heard, but not surely enough to act on (under `[stt] min_confidence`, at `clarify_confidence`
   * or above): the reply asks whether these were the words, and a yes acts on them.
   */
  unsure?: boolean;
}

/** A model round cut short by a question: it goes on when the call's result is there. */
export interface ModelRound {
  round: ChatMessage[];
  /** Index in `round` of the message whose placeholder text the real result replaces. */
  toolMessage: number;
  placeholder: string;
  toolCalls: ToolCallRecord[];
}

/** A call waiting for the person's yes, and (when the model asked for it) the round to resume. */
export interface Pending {
  call: PendingCall;
  model?: ModelRound;
}

/** A running call whose server asked the person something, and the model round it belongs to. */
export interface Asked {
  call: AskingCall;
  name: string;
  arguments: Record<string, unknown>;
  model: ModelRound;
}

/** What the model loop needs of the conversation it runs in. */
export interface ConversationMemory {
  readonly history: readonly ChatMessage[][];
  /** prompt_eval_count / estimate, smoothed. */
  readonly calibration: number;
  calibrate(ratio: number): void;
  /** True the first time only: log a clamped context once. */
  firstClamp(): boolean;
}

export const ZERO_TOKENS = { system: 0, tools: 0, history: 0, tool_results: 0, prompt_estimate: 0, prompt_eval_count: 0, budget: 0, num_ctx: 0 };

export function elapsed(since: number): number {
  return Math.round(performance.now() - since);
}
