/**
 * The pipeline, as Home Assistant's assist_pipeline has it: wake word → speech to text →
 * conversation → speech, started and ended at any stage (`start`, `end`) over any audio source
 * and sink. Every voice of IRIS is a run of it:
 * - the microphone and each room: VoiceLoop (voice.ts) runs the wake stage and the end of
 *   speech over a live stream (barge-in, follow-ups) and hands each command over from `stt`;
 * - a Wyoming request (wyoming/server.ts): `detect` runs wake→wake, `transcribe` stt→stt,
 *   `transcript` conversation→conversation, `synthesize` tts→tts;
 * - `iris say` and timer announcements: tts→tts.
 * The engines come from engines.ts; each stage emits `<stage>-start` / `-end` (events.ts).
 */
import { IrisError } from '../errors.js';
import type { AudioChunk, AudioSink, AudioSource } from './audio.js';
import { concatSamples } from './audio.js';
import type { VoiceEventType } from './events.js';
import type { SpeechToText, SttStream } from './stt.js';
import type { TextToSpeech } from './tts.js';
import type { Detection, WakeWordDetector } from './wakeword.js';

export const STAGES = ['wake', 'stt', 'conversation', 'tts'] as const;
export type PipelineStage = (typeof STAGES)[number];

/** How the words came: heard by a recogniser (with its confidence, 0–1), or by another's (Home Assistant's). */
export interface Heard {
  confidence?: number;
  heard?: boolean;
  /** Heard under the gate that acts (`minConfidence`) but at `clarifyFrom` or above: the conversation asks whether these were the words. */
  unsure?: boolean;
}

/** What the pipeline needs of a conversation turn (conversation/engine.ts's `Turn` fits). */
export interface ReplyStream<R> {
  sentences: AsyncIterable<string>;
  result: Promise<R>;
  /** Forget this reply: the conversation keeps nothing of it (an early answer taken back). */
  takeBack?: () => void;
}

export type Responder<R> = (text: string, signal: AbortSignal, heard: Heard) => ReplyStream<R>;

/** What a run starts from: audio for the wake and speech-to-text stages, text for the others. */
export type RunInput =
  /** Read until the wake word (wake), or to its end (stt; after the wake word, the rest is the command). */
  | { audio: AudioSource }
  /** One utterance (stt). */
  | { samples: Int16Array }
  /** An utterance decoded as it was spoken (stt): its words are scored now. */
  | { recognition: SttStream }
  /** The words (conversation), or what to say (tts: whole, or sentence by sentence as they come). */
  | { text: string | AsyncIterable<string> };

export interface RunOptions<R> {
  start: PipelineStage;
  end: PipelineStage;
  signal: AbortSignal;
  /** The stages' engines, from engines.ts: each stage the run passes needs its own. */
  wake?: WakeWordDetector;
  stt?: SpeechToText;
  respond?: Responder<R>;
  tts?: TextToSpeech;
  sink?: AudioSink;
  /** How the words of a run that starts from text came (default: typed). */
  heard?: Heard;
  /** Below this transcript confidence nothing is acted on (default 0). */
  minConfidence?: number;
  /**
   * Words under `minConfidence` but at this confidence or above go to the conversation marked
   * `unsure`: it asks whether they were said ("Did you say …?") and acts on a yes. Only a run
   * that reaches the conversation and can hear the answer (a loop with follow-ups). Default:
   * none (such words are not understood).
   */
  clarifyFrom?: number;
  /** Said (when the run ends at tts) when the words were not understood. */
  notUnderstood?: string;
  /** The wake word that opened the audio, taken off the transcript. */
  wakeWord?: string;
  /** Each stage's events as they happen (`atMs`: when, if not now). */
  emit?: (type: VoiceEventType, data?: Record<string, unknown>, atMs?: number) => void;
}

/** `answered`: the run reached its end stage; `no_wake`: the audio ended without the wake word; `not_understood`: no words heard surely enough to act on. */
export interface RunResult<R> {
  outcome: 'answered' | 'no_wake' | 'not_understood';
  wake?: Detection;
  transcript?: string;
  confidence?: number;
  /** The conversation's result. */
  result?: R;
  /** The conversation's reply as text (a run ending at conversation). */
  reply?: string;
  /** What IRIS said when it did not catch the words. */
  said?: string;
}

export const NOT_UNDERSTOOD = "Sorry, I didn't catch that.";

export class PipelineError extends IrisError {
  override name = 'PipelineError' as const;
}

/** Run the pipeline from `start` to `end` on `input`. Throws what a stage threw; an aborted run throws the abort. */
export async function runPipeline<R>(input: RunInput, o: RunOptions<R>): Promise<RunResult<R>> {
  const from = STAGES.indexOf(o.start);
  const to = STAGES.indexOf(o.end);
  if (to < from) throw new PipelineError('pipeline_stages', `a run cannot end at ${o.end}, before it starts at ${o.start}`);
  const emit = o.emit ?? (() => undefined);
  const need = <T>(engine: T | undefined, what: string): T => {
    if (engine === undefined) throw new PipelineError('pipeline_engine', `a run from ${o.start} to ${o.end} needs ${what}`);
    return engine;
  };
  const passes = (stage: PipelineStage) => from <= STAGES.indexOf(stage) && STAGES.indexOf(stage) <= to;
  const say = (sentences: AsyncIterable<string> | Iterable<string>) => speak(sentences, need(o.tts, 'a voice'), need(o.sink, 'somewhere to play'), o.signal, emit);
  let audio: RunInput = input;
  let wake: Detection | undefined;

  if (o.start === 'wake') {
    if (!('audio' in input)) throw new PipelineError('pipeline_input', 'the wake stage reads audio');
    const frames = input.audio.frames(o.signal)[Symbol.asyncIterator]();
    try {
      wake = await detect(need(o.wake, 'a wake-word detector'), frames, emit);
    } finally {
      if (wake === undefined || o.end === 'wake') await frames.return?.(); // the reader's listeners and buffer go with it
    }
    if (wake === undefined) return { outcome: 'no_wake' };
    if (o.end === 'wake') return { outcome: 'answered', wake };
    audio = { audio: { frames: () => ({ [Symbol.asyncIterator]: () => frames }) } }; // the rest is the command
  }

  let text: string | AsyncIterable<string>;
  let heard: Heard = o.heard ?? {};
  let done: Omit<RunResult<R>, 'outcome'> = wake ? { wake } : {};
  if (passes('stt')) {
    emit('stt-start');
    const words = await transcribe(audio, need(o.stt, 'speech to text'), o.signal);
    const transcript = stripWakeWord(words.text, wake?.word ?? o.wakeWord);
    const { confidence } = words;
    emit('stt-end', { text: transcript, raw: words.text, confidence, ...words.details });
    done = { ...done, transcript, confidence };
    const gated = transcript === '' || confidence < (o.minConfidence ?? 0);
    const unsure = gated && transcript !== '' && o.clarifyFrom !== undefined && confidence >= o.clarifyFrom && passes('conversation');
    if (gated && !unsure) {
      if (o.end !== 'tts') return { outcome: 'not_understood', ...done };
      const said = o.notUnderstood ?? NOT_UNDERSTOOD;
      await say([said]);
      return { outcome: 'not_understood', ...done, said };
    }
    if (o.end === 'stt') return { outcome: 'answered', ...done };
    text = transcript;
    heard = { confidence, ...(unsure ? { unsure } : {}) };
  } else {
    if (!('text' in input)) throw new PipelineError('pipeline_input', `a run from ${o.start} starts from text`);
    text = input.text;
  }

  if (passes('conversation')) {
    if (typeof text !== 'string') throw new PipelineError('pipeline_input', 'the conversation stage takes the words whole');
    const respond = need(o.respond, 'a conversation');
    const askedMs = performance.now();
    emit('conversation-start', { text });
    const reply = respond(text, o.signal, heard);
    let result: R;
    let said: string | undefined;
    if (o.end === 'tts') {
      [, result] = await Promise.all([say(reply.sentences), reply.result]);
    } else {
      const sentences: string[] = [];
      [, result] = await Promise.all([(async () => {
        for await (const sentence of reply.sentences) sentences.push(sentence);
      })(), reply.result]);
      said = sentences.join(' ');
    }
    const firstTokenMs = (result as { timings_ms?: { first_token?: number } } | undefined)?.timings_ms?.first_token;
    if (typeof firstTokenMs === 'number') emit('first-token', undefined, askedMs + firstTokenMs);
    emit('conversation-end');
    return { outcome: 'answered', ...done, result, ...(said === undefined ? {} : { reply: said }) };
  }

  await say(typeof text === 'string' ? [text] : text);
  return { outcome: 'answered', ...done };
}

/** The wake stage: frames until the detector fires, or the audio ends. */
async function detect(detector: WakeWordDetector, frames: AsyncIterator<AudioChunk>, emit: NonNullable<RunOptions<unknown>['emit']>): Promise<Detection | undefined> {
  emit('wake-start');
  for (let next = await frames.next(); next.done !== true; next = await frames.next()) {
    if (next.value.stopped === true) continue; // a pause in the stream, no audio
    const found = await detector.process(next.value);
    if (found === undefined) continue;
    emit('wake-end', { word: found.word, score: found.score, atS: found.atS });
    return found;
  }
  return undefined;
}

/** The speech-to-text stage on whatever audio the run has. */
async function transcribe(input: RunInput, stt: SpeechToText, signal: AbortSignal) {
  if ('recognition' in input) return input.recognition.end();
  if ('samples' in input) return stt.transcribe(input.samples, signal);
  if (!('audio' in input)) throw new PipelineError('pipeline_input', 'the speech-to-text stage reads audio');
  const chunks: Int16Array[] = [];
  for await (const chunk of input.audio.frames(signal)) {
    if (chunk.stopped === true) break; // the sender stopped streaming: the command ends there
    chunks.push(chunk.samples);
  }
  signal.throwIfAborted();
  return stt.transcribe(concatSamples(chunks), signal);
}

/**
 * Sentences synthesised or playing at once in one run: the one playing and the next, so the
 * next is ready when it ends. Started all at once, a Wyoming chunk of 120 sentences was 120
 * espeak-ng processes; the sentences after these wait in their stream.
 */
const SENTENCES_AHEAD = 2;

/**
 * The speech stage: each sentence is synthesised as soon as it exists and the one before it is
 * playing (at most `SENTENCES_AHEAD` not yet played), and played in order.
 */
async function speak(sentences: AsyncIterable<string> | Iterable<string>, tts: TextToSpeech, sink: AudioSink, signal: AbortSignal, emit: NonNullable<RunOptions<unknown>['emit']>): Promise<number> {
  let playing = Promise.resolve();
  /** Each sentence not yet played: when it will have been. */
  const unplayed: Promise<void>[] = [];
  let count = 0;
  emit('tts-start');
  try {
    for await (const sentence of sentences) {
      if (signal.aborted) break;
      if (sentence.trim() === '') continue;
      while (unplayed.length >= SENTENCES_AHEAD) await unplayed.shift();
      if (signal.aborted) break;
      const audio = tts.synthesize(sentence, signal);
      audio.catch(() => undefined); // awaited below, in order; never an unhandled rejection
      const first = count === 0;
      playing = playing.then(async () => {
        const wav = await audio;
        if (first) emit('first-audio');
        await sink.play(wav, signal);
      });
      playing.catch(() => undefined); // awaited below; while the next sentence is awaited, never unhandled
      unplayed.push(playing);
      count += 1;
    }
    await playing;
  } finally {
    emit('tts-end', { sentences: count, stopped: signal.aborted });
  }
  return count;
}

/**
 * The transcript without the wake word: the audio from just before the detection is kept, so
 * "hey jarvis" (or its tail) can open the transcript.
 */
export function stripWakeWord(text: string, word: string | undefined): string {
  const clean = text.toLowerCase().replace(/\s+/g, ' ').trim();
  if (!word) return clean;
  const words = word.toLowerCase().split(/[_\s]+/);
  const last = words[words.length - 1] ?? '';
  const lead = new RegExp(`^(?:(?:hey|ok|okay|hi)[ ,]+)?(?:${words.map(escape).join('[ ,]+')}|${escape(last)})\\b[ ,.!?]*`);
  return clean.replace(lead, '').trim();
}

const escape = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
