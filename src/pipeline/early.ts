/**
 * Answer early, take it back (issue 24): whole words that could still go on ("what time is
 * it" … "in Tokyo") are answered at the short pause when the answer changes nothing (a
 * read-only local tool, as the conversation judges); the voice loop keeps listening, and if
 * the person goes on it stops the answer, drops it from the conversation and answers the
 * whole command. The pieces the loop (voice.ts) keeps per command live here.
 */
import type { VoiceEvent } from './events.js';
import type { ReplyStream, RunResult } from './pipeline.js';
import type { SttStream, Transcript } from './stt.js';

/**
 * How far above the residual echo IRIS's own audio predicts (dB; residual.ts) speech must stand
 * to take an early answer back (`VoiceLoopOptions.echoResidual`): what the canceller leaves of
 * the answer's echo is heard by the VAD as speech. Chosen on bench-room's dev echo rooms
 * (docs/room.md, "Answer early, take it back").
 */
export const TAKE_BACK_NEAR_DB = 5;

/** Early answers over a loop's life (`iris status`, the bench). */
export interface EarlyAnswerCounts {
  /** Answers started at the short pause. */
  started: number;
  /** Of those, stopped and dropped because the person went on. */
  takenBack: number;
}

/** One command's early answer, from the moment its words were scored at a pause. */
export interface EarlyAnswer<R> {
  /** Aborts the answer (taken back, dropped, stopped); the turn's controller once kept. */
  readonly controller: AbortController;
  /** Whether it answers: the scored words are sure enough and the answer is read-only. */
  decided: Promise<boolean>;
  /** Its run of the pipeline, from the scored words on (undefined when it did not answer). */
  answer: Promise<RunResult<R> | undefined>;
  /** Set once it started answering (the `answer-early` event). */
  started: boolean;
  /** Set when the person went on: nothing more of it is recorded or remembered. */
  takenBack: boolean;
  /** The conversation's reply, to take back. */
  reply?: ReplyStream<R>;
  /** Its transcript, once heard. */
  transcript?: string;
  /** The events it emitted into the command's run: dropped from it when taken back. */
  readonly events: Set<VoiceEvent>;
  /** When it started (performance.now ms). */
  startedAtMs?: number;
}

export function earlyAnswer<R>(): EarlyAnswer<R> {
  return {
    controller: new AbortController(),
    decided: Promise.resolve(false),
    answer: Promise.resolve(undefined),
    started: false,
    takenBack: false,
    events: new Set(),
  };
}

/** The words scored at the pause, as the utterance the pipeline's speech-to-text stage ends. */
export function settledWords(words: Transcript): SttStream {
  return { push: () => undefined, partial: () => words.text, end: () => Promise.resolve(words), cancel: () => undefined };
}
