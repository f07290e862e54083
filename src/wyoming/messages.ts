/**
 * Wyoming's messages, typed once at the edge (the `wyoming` library's `asr.Transcript`,
 * `pipeline.RunPipeline`, `error.Error` …): `decode` turns an event read off the wire into a
 * typed message (a malformed one is a `WyomingError` for that connection), `encode` writes one.
 * Past here, code switches on `message.type` and never checks a field's type again. Field names
 * are the wire's (notes/wyoming.md §2).
 */
import { encodeEvent, WyomingError, type WyomingEvent } from './events.js';
import { isObject } from '../object.js';

/** Wyoming's pipeline stages, in order (`intent` and `handle` are both the conversation). */
export const WYOMING_STAGES = ['wake', 'asr', 'intent', 'handle', 'tts'] as const;
export type WyomingStage = (typeof WYOMING_STAGES)[number];
const STAGE_ORDER: Record<WyomingStage, number> = { wake: 0, asr: 1, intent: 2, handle: 2, tts: 3 };

export interface AudioFormat {
  rate: number;
  width: number;
  channels: number;
}

/** What a satellite says about itself in its `info` (its own name and area; untrusted text). */
export interface SatelliteDescription {
  name?: string;
  area?: string;
}

export type Message =
  | { type: 'describe' }
  /** `satellite`: present when the endpoint is a satellite; `data`: the whole info, as sent. */
  | { type: 'info'; satellite?: SatelliteDescription; data: Record<string, unknown> }
  | { type: 'ping'; text?: string }
  | { type: 'pong'; text?: string }
  | { type: 'run-satellite' }
  | { type: 'pause-satellite' }
  | RunPipeline
  | { type: 'detect'; names?: string[] }
  | { type: 'detection'; name: string; timestamp?: number }
  | { type: 'not-detected' }
  | { type: 'transcribe' }
  /** `context`: Home Assistant's, given back as it came; `conversation_id` read out of it. */
  | { type: 'transcript'; text: string; context?: Record<string, unknown>; conversation_id?: string }
  | { type: 'handled'; text: string; context: Record<string, unknown> }
  | { type: 'synthesize'; text: string }
  | { type: 'synthesize-start' }
  | { type: 'synthesize-chunk'; text: string }
  | { type: 'synthesize-stop' }
  | { type: 'synthesize-stopped' }
  | ({ type: 'audio-start'; timestamp: number } & AudioFormat)
  /** `audio`: the PCM (empty when the event had no payload). */
  | AudioChunk
  | { type: 'audio-stop'; timestamp?: number }
  | { type: 'played' }
  | { type: 'error'; text: string; code?: string }
  | { type: 'voice-started'; timestamp: number }
  | { type: 'voice-stopped'; timestamp: number }
  | { type: 'timer-started'; id: string; total_seconds: number; name?: string }
  | { type: 'timer-finished'; id: string };

export interface AudioChunk extends AudioFormat {
  type: 'audio-chunk';
  timestamp?: number;
  audio: Buffer;
}

/** A satellite asks for a run from `start_stage` to `end_stage` (checked: known stages, the end not before the start). */
export interface RunPipeline {
  type: 'run-pipeline';
  start_stage: WyomingStage;
  end_stage: WyomingStage;
  restart_on_end: boolean;
}

const text = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);
const number = (value: unknown): number | undefined => (typeof value === 'number' ? value : undefined);
const isStage = (value: unknown): value is WyomingStage => (WYOMING_STAGES as readonly unknown[]).includes(value);
/** A peer's text in an error message: quoted, short. */
const said = (value: unknown): string => JSON.stringify(String(value).slice(0, 40));

/** `start_stage` and `end_stage` (default `tts`) checked as the library's `RunPipeline` does. */
function runPipeline(data: Record<string, unknown>): RunPipeline {
  const start = data.start_stage;
  if (!isStage(start)) throw new WyomingError('wyoming_bad_stage', `cannot start a pipeline at ${said(start)}`);
  const end = data.end_stage ?? 'tts';
  if (!isStage(end) || STAGE_ORDER[end] < STAGE_ORDER[start]) throw new WyomingError('wyoming_bad_stage', `cannot end a pipeline started at ${start} at ${said(end)}`);
  return { type: 'run-pipeline', start_stage: start, end_stage: end, restart_on_end: data.restart_on_end === true };
}

/**
 * The typed message an event carries, or undefined for a type IRIS does not read. A message
 * missing what it is for (a `transcript` without a text) or with bad stages is a `WyomingError`.
 */
export function decode(event: WyomingEvent): Message | undefined {
  const { data } = event;
  switch (event.type) {
    case 'describe':
    case 'run-satellite':
    case 'pause-satellite':
    case 'not-detected':
    case 'transcribe':
    case 'synthesize-start':
    case 'synthesize-stop':
    case 'synthesize-stopped':
    case 'played':
      return { type: event.type };
    case 'info': {
      const satellite = isObject(data.satellite) ? data.satellite : undefined;
      const description = satellite && { ...(text(satellite.name) === undefined ? {} : { name: text(satellite.name) }), ...(text(satellite.area) === undefined ? {} : { area: text(satellite.area) }) };
      return { type: 'info', data, ...(description ? { satellite: description as SatelliteDescription } : {}) };
    }
    case 'ping':
    case 'pong':
      return { type: event.type, ...(text(data.text) === undefined ? {} : { text: text(data.text) as string }) };
    case 'run-pipeline':
      return runPipeline(data);
    case 'detect': {
      const names = Array.isArray(data.names) ? data.names.filter((n): n is string => typeof n === 'string') : undefined;
      return { type: 'detect', ...(names ? { names } : {}) };
    }
    case 'detection': {
      const timestamp = number(data.timestamp);
      return { type: 'detection', name: text(data.name) ?? '', ...(timestamp === undefined ? {} : { timestamp }) };
    }
    case 'transcript': {
      const said = text(data.text);
      if (said === undefined) throw new WyomingError('wyoming_bad_event', '"transcript" without a text');
      const context = isObject(data.context) ? data.context : undefined;
      const id = text(context?.conversation_id);
      return { type: 'transcript', text: said, ...(context === undefined ? {} : { context }), ...(id === undefined ? {} : { conversation_id: id }) };
    }
    case 'synthesize': {
      const said = text(data.text);
      if (said === undefined) throw new WyomingError('wyoming_bad_event', '"synthesize" without a text');
      return { type: 'synthesize', text: said };
    }
    case 'error': {
      const code = text(data.code);
      return { type: 'error', text: text(data.text) ?? '', ...(code === undefined ? {} : { code }) };
    }
    case 'synthesize-chunk':
      return { type: 'synthesize-chunk', text: text(data.text) ?? '' }; // a chunk without text adds nothing
    case 'audio-start':
      return { type: 'audio-start', ...format(data), timestamp: number(data.timestamp) ?? 0 };
    case 'audio-chunk': {
      const timestamp = number(data.timestamp);
      return { type: 'audio-chunk', ...format(data), ...(timestamp === undefined ? {} : { timestamp }), audio: event.payload ?? Buffer.alloc(0) };
    }
    case 'audio-stop': {
      const timestamp = number(data.timestamp);
      return { type: 'audio-stop', ...(timestamp === undefined ? {} : { timestamp }) };
    }
    default:
      return undefined;
  }
}

/** An audio event's format; absent fields are 16 kHz mono 16-bit (Wyoming's defaults), a field that is not a number is NaN (refused where audio is read). */
function format(data: Record<string, unknown>): AudioFormat {
  const field = (name: string, otherwise: number): number => (data[name] === undefined ? otherwise : (number(data[name]) ?? NaN));
  return { rate: field('rate', 16_000), width: field('width', 2), channels: field('channels', 1) };
}

/** A message as an event (an `audio-chunk`'s audio its payload). */
export function toEvent(message: Message): WyomingEvent {
  if (message.type === 'info') return { type: 'info', data: message.data };
  if (message.type === 'audio-chunk') {
    const { type, audio, ...data } = message;
    return { type, data: defined(data), ...(audio.length > 0 ? { payload: audio } : {}) };
  }
  const { type, ...data } = message;
  return { type, data: defined(data) };
}

const defined = (fields: Record<string, unknown>): Record<string, unknown> => Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined));

/** A message as bytes on the wire. */
export function encode(message: Message): Buffer {
  const event = toEvent(message);
  return encodeEvent(event.type, event.data, event.payload);
}
