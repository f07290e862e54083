/**
 * The conversation engine: one turn is the local path when it is sure, else the model loop
 * (model-turn.ts) under the token budget. A call the tool host holds for the person's yes —
 * the model's or a spoken command's — waits here for the next turn, which must be a whole yes
 * or no; anything else drops it and is a request of its own, and it expires. A running call
 * whose server asked the person something (asking.ts) waits here too: the next turn is the
 * answer. A tool's "which one?" ("The tea or the pasta timer?") waits for the next turn: naming
 * one of its choices answers it; anything else is a request of its own. Words heard unsurely
 * (`TurnInput.unsure`) are asked about ("Did you say …?"): a yes acts on them, a no asks for them
 * again, anything else is a request of its own. History and the token
 * calibration live here. The reply streams out as complete
 * sentences.
 */
import { isAbortError, messageOf } from '../errors.js';
import type { Logger } from '../log.js';
import { resultText } from '../toolhost/api.js';
import { ChatError, type ChatMessage } from './backend.js';
import { Channel } from './channel.js';
import { matchIntent } from '../intents/match.js';
import { answerChoice, answerLocally, answersReadOnly, choose, toolCallRecord, type Choice, type LocalAnswer, type ToolCallRecord } from './local.js';
import { ModelTurn } from './model-turn.js';
import { speakable } from './speech.js';
import { NOT_UNDERSTOOD } from '../pipeline/pipeline.js';
import { elapsed, ZERO_TOKENS, type Asked, type ConversationMemory, type ConversationOptions, type Pending, type Turn, type TurnInput, type TurnResult } from './types.js';

export type { ConversationOptions, Route, Turn, TurnInput, TurnResult } from './types.js';

/** A model load can take a minute on a small machine (users report 30–100 s cold starts). */
const WARM_TIMEOUT_MS = 120_000;
/** `iris status` must answer even with Ollama down. */
const STATUS_TIMEOUT_MS = 1_500;

/** A spoken yes that might be noise (under `confirm_confidence`), to a held call's question or "Did you say …?". */
const ASK_YES_AGAIN = 'Sorry, was that a yes? Please say yes or no.';

/** Unsure words longer than this are not read back in a question ("Did you say …?"). */
const MAX_ASKED_WORDS = 16;

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
  #asked: Asked | undefined;
  /** A tool asked which one ("The tea or the pasta timer?"): the next turn may name it. */
  #choice: Choice | undefined;
  /** Words heard unsurely, asked about ("Did you say …?"): a yes before `expiresAt` acts on them. */
  #unsure: { text: string; expiresAt: number } | undefined;
  #warming = false;
  /** User messages of turns taken back: their rounds are never remembered. */
  readonly #takenBack = new WeakSet<ChatMessage>();

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
    this.#choice = undefined;
    this.#unsure = undefined;
    this.#asked?.call.abandon();
    this.#asked = undefined;
  }

  /**
   * Whether `text` may be answered before the person has surely finished (the voice loop's
   * early answer, taken back if they go on): the local path answers it with a read-only native
   * tool, and no question is open (a held call's yes, a tool's question), which any turn would
   * close.
   */
  async answersEarly(text: string): Promise<boolean> {
    if (this.#pending !== undefined || this.#asked !== undefined || this.#unsure !== undefined) return false;
    return answersReadOnly(await matchIntent(text), this.#options.host);
  }

  turn(text: string, signal: AbortSignal = new AbortController().signal, input: TurnInput = {}): Turn {
    const sentences = new Channel<string>();
    const user: ChatMessage = { role: 'user', content: text };
    const result = this.#run(user, signal, sentences, input)
      .then((done) => {
        const question = this.#asked?.call.question;
        if (question !== undefined) return { ...done, question: { server: question.server, expires_at: new Date(question.expiresAt).toISOString() } };
        return this.#pending === undefined ? done : { ...done, confirm: { tool: this.#pending.call.label, expires_at: new Date(this.#pending.call.expiresAt).toISOString() } };
      })
      .finally(() => sentences.close());
    return { sentences, result, takeBack: () => this.#takeBack(user) };
  }

  /** Forget the round `user` opened, and never remember it (it may still be running). */
  #takeBack(user: ChatMessage): void {
    this.#takenBack.add(user);
    this.#history = this.#history.filter((round) => !round.includes(user));
  }

  async #run(user: ChatMessage, signal: AbortSignal, out: Channel<string>, input: TurnInput): Promise<TurnResult> {
    const text = user.content;
    const now = this.#options.now ?? Date.now;
    const started = performance.now();
    const { config, host } = this.#options;
    if (now() - this.#lastTurnAt > config.assistant.forget_after_s * 1000) this.reset();
    this.#lastTurnAt = now();
    if (input.unsure === true) return this.#askUnsure(user, out, started);
    const unsure = this.#unsure;
    this.#unsure = undefined;
    const asked = this.#asked;
    this.#asked = undefined;
    if (asked?.call.waiting === true) {
      // A running tool's question: this is the answer (or it is asked again).
      const step = await asked.call.answer(text, input.confidence !== undefined);
      if ('again' in step) {
        this.#asked = asked;
        return this.#localReply(user, step.again, [], out, started, false);
      }
      return this.#model((turn) => turn.answered(asked, this.#memory, step.say), signal, out, started);
    }
    asked?.call.abandon(); // its question went unanswered and was declined: this is a request of its own
    const pending = this.#pending;
    this.#pending = undefined;
    // One match for the whole turn: a yes or no must be the whole utterance (intents/sentences.ts).
    const match = await matchIntent(text);
    const said = match?.intent.name;
    if (unsure !== undefined && (said === 'yes' || said === 'no')) {
      if (now() > unsure.expiresAt) return this.#localReply(user, 'I asked too long ago. Please say it again.', [], out, started, false);
      if (said === 'no') return this.#localReply(user, 'OK. Please say it again.', [], out, started, false);
      if (input.confidence !== undefined && input.confidence < config.stt.confirm_confidence) {
        this.#unsure = unsure; // a yes that might be noise: ask again, the question stays open
        return this.#localReply(user, ASK_YES_AGAIN, [], out, started, false);
      }
      // The words as if heard surely: still spoken (a tool that asks before it runs still asks).
      return this.#run({ role: 'user', content: unsure.text }, signal, out, { heard: true });
    }
    const answer = pending !== undefined && (said === 'yes' || said === 'no') ? said : undefined;
    if (pending !== undefined && answer !== undefined) {
      if (now() > pending.call.expiresAt) {
        return this.#localReply(user, answer === 'yes' ? 'I asked too long ago, so I did not do it. Ask again if you still want it.' : "OK, I won't.", [], out, started);
      }
      if (answer === 'yes' && input.confidence !== undefined && input.confidence < config.stt.confirm_confidence) {
        // A spoken yes that might be noise: ask again, keep the question open.
        this.#pending = pending;
        return this.#localReply(user, ASK_YES_AGAIN, [], out, started);
      }
      return this.#answer(pending, answer === 'yes', user, signal, out, started);
    }

    // What the person typed acts at once; what was heard is confirmed first where the tool asks.
    const how = { signal, origin: (input.heard ?? input.confidence !== undefined) ? 'spoken' as const : 'typed' as const, room: this.#options.place?.room };
    // An answer to "which one?" names one of its choices; anything else is a request of its own.
    const choice = this.#choice;
    this.#choice = undefined;
    const chosen = choice === undefined ? undefined : await choose(text, choice);
    const local: LocalAnswer | undefined = choice !== undefined && chosen !== undefined
      ? await answerChoice(choice, chosen, host, how)
      : await answerLocally(text, host, signal, match, how.origin, how.room);
    if (local?.pending !== undefined) this.#pending = { call: local.pending };
    this.#choice = local?.choice;
    if (local !== undefined) return this.#localReply(user, local.reply, local.tool_calls, out, started);

    return this.#model((turn) => turn.run([user], this.#memory), signal, out, started);
  }

  /**
   * Words heard under the gate that acts: ask whether they were said, and act on a yes (next
   * turn). An open question (a held call's yes, a tool's question or choice) stays open and is
   * not asked over: then these words are not understood, as they were before asking existed.
   */
  async #askUnsure(user: ChatMessage, out: Channel<string>, started: number): Promise<TurnResult> {
    const said = (await matchIntent(user.content))?.intent.name;
    // An unsure yes or no is never asked about ("Did you say yes?"): a question open for it stays open.
    if (said === 'yes' && this.#unsure !== undefined) return this.#localReply(user, ASK_YES_AGAIN, [], out, started, false);
    // A long transcript (a free recogniser's run-on words) is not read back: not understood, as before.
    const long = user.content.split(/\s+/).length > MAX_ASKED_WORDS;
    if (long || said === 'yes' || said === 'no' || this.#pending !== undefined || this.#asked !== undefined || this.#choice !== undefined) return this.#localReply(user, NOT_UNDERSTOOD, [], out, started, false);
    const now = this.#options.now ?? Date.now;
    this.#unsure = { text: user.content, expiresAt: now() + this.#options.config.assistant.confirm_timeout_s * 1000 };
    return this.#localReply(user, `Did you say: ${user.content}?`, [], out, started, false);
  }

  /** A reply made here, not by the model; `remember` it unless it is part of a round still open. */
  #localReply(user: ChatMessage, text: string, toolCalls: ToolCallRecord[], out: Channel<string>, started: number, remember = true): TurnResult {
    const reply = speakable(text);
    out.push(reply);
    if (remember) this.#remember([user, { role: 'assistant', content: reply }]);
    return {
      reply,
      route: 'local',
      tool_calls: toolCalls,
      tokens: { ...ZERO_TOKENS },
      timings_ms: { total: elapsed(started), first_token: 0 },
      repairs: {},
    };
  }

  /** The person answered a held call: run it (or not) through the host; the model goes on with its round. */
  async #answer(pending: Pending, yes: boolean, user: ChatMessage, signal: AbortSignal, out: Channel<string>, started: number): Promise<TurnResult> {
    const { model } = pending;
    if (model !== undefined) return this.#model((turn) => turn.resume({ ...pending, model }, yes, user, this.#memory), signal, out, started);
    if (!yes) return this.#localReply(user, "OK, I won't.", [], out, started);
    const room = this.#options.place?.room;
    const result = await this.#options.host.runConfirmed(pending.call, { signal, ...(room === undefined ? {} : { room }) });
    return this.#localReply(user, resultText(result), [toolCallRecord(pending.call.label, pending.call.arguments, result)], out, started);
  }

  get #memory(): ConversationMemory {
    return {
      history: this.#history,
      calibration: this.#calibration,
      calibrate: (ratio) => this.#calibrate(ratio),
      firstClamp: () => this.#logClamp(),
    };
  }

  async #model(rounds: (turn: ModelTurn) => Promise<string>, signal: AbortSignal, out: Channel<string>, started: number): Promise<TurnResult> {
    const turn = new ModelTurn(this.#options, signal, out, started);
    try {
      const reply = await rounds(turn);
      const confirm = turn.confirmation;
      if (confirm !== undefined) this.#pending = confirm;
      else if (turn.asked !== undefined) this.#asked = turn.asked;
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
    if (round.some((message) => this.#takenBack.has(message))) return;
    this.#history.push(round);
    if (this.#history.length > MAX_KEPT_ROUNDS) this.#history.shift();
  }
}

