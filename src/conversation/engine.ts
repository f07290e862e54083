/**
 * The conversation engine: one turn is the local path when it is sure, else a bounded tool
 * loop with the model (model-turn.ts) under the token budget; a remote call that needs the
 * user's yes waits here for the next turn. History and the token calibration live here.
 * The reply streams out as complete sentences.
 */
import { cutToolResult, type TokenFigures } from '../budget/fit.js';
import type { Tokenizer } from '../budget/tokenizer.js';
import type { Config } from '../config/schema.js';
import { isAbortError, messageOf } from '../errors.js';
import type { Logger } from '../log.js';
import { resultText } from '../toolhost/api.js';
import type { ToolHost } from '../toolhost/host.js';
import type { McpProxy } from '../toolhost/mcp/proxy.js';
import { ChatError, type ChatBackend, type ChatMessage } from './backend.js';
import { matchIntent, type IntentMatch } from '../intents/match.js';
import { answerLocally, toolCallRecord, type ToolCallRecord } from './local.js';
import { Channel, elapsed, ModelTurn, ZERO_TOKENS, type Pending } from './model-turn.js';
import type { RepairKind } from './repair.js';
import { speakable } from './speech.js';

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
}

export interface Turn {
  /** Complete, speakable sentences as soon as they exist. */
  sentences: AsyncIterable<string>;
  /** Rejects only when the turn was cancelled (with the abort reason). */
  result: Promise<TurnResult>;
}

export interface ConversationOptions {
  config: Config;
  backend: ChatBackend;
  host: ToolHost;
  /** Loaded on the first model turn (the local path does not need it). */
  tokenizer: () => Promise<Tokenizer>;
  log: Logger;
  /** Epoch ms; default Date.now. */
  now?: () => number;
  /** The MCP proxy, which runs remote calls once the user has said yes. */
  mcp?: Pick<McpProxy, 'runConfirmed'>;
}

/** How a turn's text came in: spoken ones carry the recogniser's confidence. */
export interface TurnInput {
  /** 0–1, for spoken text; typed text has none. */
  confidence?: number;
}

/** A destructive local action asked by voice, waiting for the user's yes. */
interface LocalPending {
  match: IntentMatch;
  question: string;
}


/** A model load can take a minute on a small machine (users report 30–100 s cold starts). */
const WARM_TIMEOUT_MS = 120_000;
/** `iris status` must answer even with Ollama down. */
const STATUS_TIMEOUT_MS = 1_500;

/** Keep at most this many past rounds in memory; the budget decides how many are sent. */
const MAX_KEPT_ROUNDS = 50;
/** Calibration factor bounds: a wild prompt_eval_count must not wreck the budget. */
const CALIBRATION_RANGE = [0.7, 1.6] as const;

export class Conversation {
  readonly #options: ConversationOptions;
  readonly #log: Logger;
  #history: ChatMessage[][] = [];
  #lastTurnAt = 0;
  /** prompt_eval_count / estimate, smoothed: corrects the estimate to what the model counts. */
  #calibration = 1;
  #clampLogged = false;
  #pending: Pending | undefined;
  #localPending: LocalPending | undefined;
  #warming = false;

  constructor(options: ConversationOptions) {
    this.#options = options;
    this.#log = options.log;
  }

  /**
   * Ask the model to load now, while the person is still speaking (the wake word fired), so a
   * model answer does not start with a model load. Fire and forget; a failure only logs.
   */
  warm(): void {
    const { backend, config } = this.#options;
    if (backend.load === undefined || this.#warming) return;
    this.#warming = true;
    backend.load(config.ollama.model, config.ollama.keep_alive, AbortSignal.timeout(WARM_TIMEOUT_MS))
      .catch((error: unknown) => this.#log.debug(`warming ${config.ollama.model} failed: ${messageOf(error)}`))
      .finally(() => (this.#warming = false));
  }

  /** Whether Ollama has the model loaded now; null when it cannot be asked. */
  async modelLoaded(): Promise<boolean | null> {
    const { backend, config } = this.#options;
    if (backend.loaded === undefined) return null;
    try {
      const names = await backend.loaded(AbortSignal.timeout(STATUS_TIMEOUT_MS));
      const wanted = config.ollama.model.includes(':') ? config.ollama.model : `${config.ollama.model}:latest`;
      return names.some((name) => name === config.ollama.model || name === wanted);
    } catch {
      return null;
    }
  }

  /** Forget the conversation (follow-ups start afresh). */
  reset(): void {
    this.#history = [];
    this.#pending = undefined;
    this.#localPending = undefined;
  }

  turn(text: string, signal: AbortSignal = new AbortController().signal, input: TurnInput = {}): Turn {
    const sentences = new Channel<string>();
    const result = this.#run(text, signal, sentences, input).finally(() => sentences.close());
    return { sentences, result };
  }

  async #run(text: string, signal: AbortSignal, out: Channel<string>, input: TurnInput): Promise<TurnResult> {
    const now = this.#options.now ?? Date.now;
    const started = performance.now();
    const { config } = this.#options;
    if (now() - this.#lastTurnAt > config.assistant.forget_after_s * 1000) this.reset();
    this.#lastTurnAt = now();
    const user: ChatMessage = { role: 'user', content: text };
    const pending = this.#pending;
    const localPending = this.#localPending;
    this.#pending = undefined;
    this.#localPending = undefined;
    // One match for the whole turn: a yes or no must be the whole utterance (intents/sentences.ts).
    const match = await matchIntent(text);
    const said = match?.intent.name;
    const answer = pending !== undefined || localPending !== undefined ? (said === 'yes' || said === 'no' ? said : undefined) : undefined;
    if (answer === 'yes' && input.confidence !== undefined && input.confidence < config.stt.confirm_confidence) {
      // A spoken yes that might be noise: ask again, keep the question open.
      this.#pending = pending;
      this.#localPending = localPending;
      return this.#localReply(user, 'Sorry, was that a yes? Please say yes or no.', [], out, started);
    }
    if (localPending !== undefined && answer !== undefined) {
      if (answer === 'no') return this.#localReply(user, "OK, I won't.", [], out, started);
      const done = await answerLocally(text, this.#options.host, signal, localPending.match);
      if (done !== undefined) return this.#localReply(user, done.reply, done.tool_calls, out, started);
    }
    if (pending !== undefined && answer !== undefined) {
      return this.#answerConfirmation(pending, answer === 'yes', user, signal, out, started);
    }

    if (match !== undefined && input.confidence !== undefined) {
      const question = await this.#confirmFirst(match, signal);
      if (question !== undefined) {
        this.#localPending = { match, question };
        return this.#localReply(user, question, [], out, started);
      }
    }
    const local = await answerLocally(text, this.#options.host, signal, match);
    if (local !== undefined) return this.#localReply(user, local.reply, local.tool_calls, out, started);

    return this.#model([user], signal, out, started);
  }

  #localReply(user: ChatMessage, text: string, toolCalls: ToolCallRecord[], out: Channel<string>, started: number): TurnResult {
    const reply = speakable(text);
    out.push(reply);
    this.#remember([user, { role: 'assistant', content: reply }]);
    return {
      reply,
      route: 'local',
      tool_calls: toolCalls,
      tokens: { ...ZERO_TOKENS },
      timings_ms: { total: elapsed(started), first_token: 0 },
      repairs: {},
    };
  }

  /**
   * The question to ask before a destructive local action asked by voice: cancelling all
   * timers, or one of several (a misheard name must not cancel the wrong one). Undefined when
   * it can go ahead.
   */
  async #confirmFirst(match: IntentMatch, signal: AbortSignal): Promise<string | undefined> {
    if (match.intent.tool !== 'cancel_timer' || !this.#options.host.has('list_timers')) return undefined;
    const listed = await this.#options.host.call('list_timers', {}, { signal });
    const rows = listed.structuredContent?.timers;
    const count = Array.isArray(rows) ? rows.length : 0;
    if (count === 0) return undefined; // nothing to lose: the tool says so
    if (match.intent.name === 'cancel_all') return `Cancel all ${count === 1 ? 'one timer or reminder' : `${count} timers and reminders`}? Say yes or no.`;
    const id = typeof match.args.id === 'string' ? `${match.args.id} ` : '';
    if (count > 1) return `Cancel the ${id}timer? You have ${count}. Say yes or no.`;
    return undefined;
  }

  /** The user answered a confirmation question: run the call (or not) and let the model go on. */
  async #answerConfirmation(
    pending: Pending, yes: boolean, user: ChatMessage, signal: AbortSignal, out: Channel<string>, started: number,
  ): Promise<TurnResult> {
    const { call } = pending;
    const result = yes && this.#options.mcp !== undefined
      ? await this.#options.mcp.runConfirmed(call, signal)
      : { content: [{ type: 'text' as const, text: 'The user said no; the tool was not run.' }], isError: true };
    const round = [...pending.round];
    const message = round[pending.toolMessage];
    if (message !== undefined) {
      round[pending.toolMessage] = { ...message, content: cutToolResult(resultText(result), this.#options.config.budget.tool_result_chars) };
    }
    round.push(user);
    const records = [...pending.toolCalls, toolCallRecord(`${call.server}.${call.tool}`, call.arguments, result)];
    return this.#model(round, signal, out, started, records);
  }

  async #model(round: ChatMessage[], signal: AbortSignal, out: Channel<string>, started: number, records: ToolCallRecord[] = []): Promise<TurnResult> {
    const turn = new ModelTurn(this.#options, signal, out, started, records);
    try {
      const reply = await turn.run(round, this.#history, this.#calibration, (factor) => this.#calibrate(factor), () => this.#logClamp());
      const confirm = turn.confirmation;
      if (confirm !== undefined) this.#pending = confirm;
      else this.#remember(turn.round);
      return turn.result('llm', reply);
    } catch (error) {
      if (signal.aborted) throw signal.reason ?? error;
      if (isAbortError(error)) throw error;
      const failure = error instanceof ChatError ? error : new ChatError('rejected', messageOf(error), { cause: error });
      if (!(error instanceof ChatError)) this.#log.error(`turn failed: ${messageOf(error)}`);
      const reply = turn.fallbackReply(failure);
      this.#log.info(`model path failed (${failure.code}): ${failure.message}`);
      out.push(reply);
      return { ...turn.result('fallback', turn.spoken(reply)), error: { code: failure.code, message: failure.message } };
    }
  }

  #calibrate(ratio: number): void {
    const clamped = Math.min(CALIBRATION_RANGE[1], Math.max(CALIBRATION_RANGE[0], ratio));
    this.#calibration = this.#calibration * 0.5 + clamped * 0.5;
  }

  #logClamp(): boolean {
    const first = !this.#clampLogged;
    this.#clampLogged = true;
    return first;
  }

  #remember(round: ChatMessage[]): void {
    this.#history.push(round);
    if (this.#history.length > MAX_KEPT_ROUNDS) this.#history.shift();
  }
}

