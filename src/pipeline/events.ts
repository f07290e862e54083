/**
 * Stage events, Home Assistant's pipeline style: every stage of a voice turn emits
 * `<stage>-start` and `<stage>-end` with the run id and a monotonic time. The daemon's one log
 * line per turn, `iris listen --json`'s timings and the benchmarks all read these events.
 */

export type Stage = 'wake' | 'end_of_speech' | 'stt' | 'conversation' | 'tts';

export type VoiceEventType =
  | 'run-start'
  | 'run-end'
  | `${Stage}-start`
  | `${Stage}-end`
  | 'first-token'
  | 'first-audio'
  /** The command's speech began (the endpointer heard voice). */
  | 'speech-start'
  | 'barge-in'
  /** The wake word heard on the microphone was IRIS's own voice saying it (`atS`: where in the audio): ignored. */
  | 'own-wake'
  /** The stop word stopped the reply (`atS`: where in the audio it was heard). */
  | 'stop-word'
  /** Scoring the words at a pause (`atS`: where in the audio), done, or voided by more speech. */
  | 'settle-start'
  | 'settle-end'
  | 'settle-void'
  /** A read-only answer started at a short pause, while the person might still go on (`atS`: where in the audio). */
  | 'answer-early'
  /** The person went on (`atS`: where in the audio): the early answer stopped and was dropped. */
  | 'answer-taken-back'
  /** Speech while an early answer was under way that stood no higher than its own echo's predicted residual (`nearDb`, dB): not taken for the person. */
  | 'answer-echo'
  | 'error';

export interface VoiceEvent {
  type: VoiceEventType;
  run: number;
  /** performance.now() when it happened (ms). */
  atMs: number;
  data?: Record<string, unknown>;
}

export interface Timings {
  /** Where in the audio the wake word was heard (ms from the start of the stream). */
  wake: number;
  /** Where in the audio the command ended (ms from the start of the stream). */
  end_of_speech: number;
  /** Speech-to-text time (ms). */
  stt: number;
  /** From handing the text to the conversation to its first token (ms). */
  first_token: number;
  /** From the end of speech (for an early answer: from its start) to the first reply audio ready to play (ms). */
  first_audio: number;
  /** The whole run, wall clock (ms). */
  total: number;
}

const ms = (value: number): number => Math.round(value * 10) / 10;

/** Turn one run's events into its timings; stages that did not happen count 0. */
export function timingsOf(events: readonly VoiceEvent[]): Timings {
  const at = (type: VoiceEventType) => events.find((e) => e.type === type);
  const span = (from: VoiceEventType, to: VoiceEventType) => {
    const [a, b] = [at(from), at(to)];
    return a && b ? ms(b.atMs - a.atMs) : 0;
  };
  const audioS = (type: VoiceEventType) => Number(at(type)?.data?.atS ?? 0);
  return {
    wake: ms(audioS('wake-end') * 1000),
    end_of_speech: ms(audioS('end_of_speech-end') * 1000),
    stt: span('stt-start', 'stt-end'),
    first_token: span('conversation-start', 'first-token'),
    first_audio: span(at('answer-early') ? 'answer-early' : 'end_of_speech-end', 'first-audio'),
    total: span('run-start', 'run-end'),
  };
}

/** The daemon's one line per turn. */
export function summaryLine(run: number, events: readonly VoiceEvent[]): string {
  const t = timingsOf(events);
  const end = events.find((e) => e.type === 'run-end')?.data ?? {};
  const transcript = events.find((e) => e.type === 'stt-end')?.data?.text;
  const parts = [
    `turn ${run}: ${typeof end.outcome === 'string' ? end.outcome : 'done'}`,
    `wake ${(t.wake / 1000).toFixed(2)} s`,
    `end of speech ${(t.end_of_speech / 1000).toFixed(2)} s`,
    `stt ${t.stt} ms`,
    `first token ${t.first_token} ms`,
    `first audio ${t.first_audio} ms`,
    `total ${t.total} ms`,
  ];
  if (typeof transcript === 'string') parts.push(JSON.stringify(transcript));
  const takenBack = events.filter((e) => e.type === 'answer-taken-back').length;
  if (events.some((e) => e.type === 'answer-early')) parts.push('answered early');
  if (takenBack > 0) parts.push(`${takenBack} early answer${takenBack === 1 ? '' : 's'} taken back`);
  return parts.join(', ');
}

/** What each event's data holds, as the pipeline and the voice loop emit it. */
export interface VoiceEventData {
  'run-start': { followUp?: boolean; bargeIn?: boolean };
  'run-end': { outcome?: string };
  'wake-end': { word?: string; score?: number; atS?: number };
  'own-wake': { word?: string; score?: number; atS?: number; fit?: number; nearDb?: number };
  'speech-start': { atS?: number };
  'end_of_speech-end': { atS?: number; state?: string };
  'stt-end': { text?: string; raw?: string; confidence?: number };
  'answer-taken-back': { atS?: number; text?: string; after_ms?: number; nearDb?: number };
  'answer-echo': { atS?: number; nearDb?: number; personDb?: number };
  error: { message?: string };
}

/** An event's data, typed for its kind (empty for an event of another kind): the emitters are this process's own code, so it is read, not checked again. */
export function dataOf<T extends keyof VoiceEventData>(event: VoiceEvent, type: T): VoiceEventData[T] {
  return event.type === type ? (event.data ?? {}) : {};
}
