/**
 * Wyoming events on a byte stream (OHF-Voice/wyoming; notes/wyoming.md): a JSON header line,
 * then `data_length` bytes of JSON merged over the header's `data`, then `payload_length`
 * bytes of payload (PCM). Peers are untrusted: every length is bounded and a malformed event
 * is an error for that connection, never a crash.
 */
import { IrisError } from '../errors.js';
import { isObject } from '../object.js';

export interface WyomingEvent {
  type: string;
  data: Record<string, unknown>;
  payload?: Buffer;
}

export class WyomingError extends IrisError {
  override name = 'WyomingError' as const;
}

/** The protocol version IRIS writes (wyoming 1.9, what Home Assistant uses). */
const VERSION = '1.9.0';
/** Longest header line (bytes): a few fields. */
const MAX_HEADER = 64 * 1024;
/** Longest data segment (bytes): an `info` or a transcript's context. */
const MAX_DATA = 1024 * 1024;
/** Longest payload (bytes): audio chunks are 2 KiB; a second of 48 kHz stereo float is 384 KiB. */
const MAX_PAYLOAD = 4 * 1024 * 1024;

/**
 * One event as bytes, as the reference writer lays it out: `type`, `version`, then the data in
 * its own segment (`data_length`) when there is any, then `payload_length` when there is a payload.
 */
export function encodeEvent(type: string, data: Record<string, unknown> = {}, payload?: Buffer): Buffer {
  const body = Object.keys(data).length > 0 ? Buffer.from(JSON.stringify(data), 'utf8') : undefined;
  const header: Record<string, unknown> = { type, version: VERSION };
  if (body !== undefined) header.data_length = body.length;
  const sent = payload !== undefined && payload.length > 0 ? payload : undefined;
  if (sent !== undefined) header.payload_length = sent.length;
  return Buffer.concat([Buffer.from(`${JSON.stringify(header)}\n`, 'utf8'), ...(body ? [body] : []), ...(sent ? [sent] : [])]);
}

/** Reads events out of a stream's chunks; `push` returns the events each chunk completed. */
export class EventReader {
  #buffer: Buffer = Buffer.alloc(0);
  #pending: { type: string; data: Record<string, unknown>; dataLength: number; payloadLength: number } | undefined;
  /** Chunks of a payload still arriving, joined once it is whole (joining at every chunk made a
   * 4 MiB payload cost hundreds of MiB of copying). */
  #waiting: Buffer[] = [];
  #waitingBytes = 0;

  /** Part of an event has arrived and the rest has not. */
  get partial(): boolean {
    return this.#pending !== undefined || this.#buffer.length > 0 || this.#waitingBytes > 0;
  }

  /** Bytes read and not yet part of a whole event. */
  get bufferedBytes(): number {
    return this.#buffer.length + this.#waitingBytes;
  }

  push(chunk: Buffer): WyomingEvent[] {
    const pending = this.#pending;
    if (pending !== undefined && this.#buffer.length + this.#waitingBytes + chunk.length < pending.dataLength + pending.payloadLength) {
      this.#waiting.push(chunk);
      this.#waitingBytes += chunk.length;
      return [];
    }
    this.#buffer = this.#buffer.length === 0 && this.#waiting.length === 0 ? chunk : Buffer.concat([this.#buffer, ...this.#waiting, chunk]);
    this.#waiting = [];
    this.#waitingBytes = 0;
    const events: WyomingEvent[] = [];
    for (;;) {
      if (this.#pending === undefined) {
        const newline = this.#buffer.indexOf(0x0a);
        if (newline === -1) {
          if (this.#buffer.length > MAX_HEADER) throw new WyomingError('wyoming_bad_event', `a header line longer than ${MAX_HEADER} bytes`);
          return this.#compact(events);
        }
        this.#pending = header(this.#buffer.subarray(0, newline));
        this.#buffer = this.#buffer.subarray(newline + 1);
      }
      const { type, data, dataLength, payloadLength } = this.#pending;
      if (this.#buffer.length < dataLength + payloadLength) return this.#compact(events);
      const merged = dataLength > 0 ? { ...data, ...segment(this.#buffer.subarray(0, dataLength)) } : data;
      const event: WyomingEvent = { type, data: merged };
      if (payloadLength > 0) event.payload = Buffer.from(this.#buffer.subarray(dataLength, dataLength + payloadLength));
      this.#buffer = this.#buffer.subarray(dataLength + payloadLength);
      this.#pending = undefined;
      events.push(event);
    }
  }

  /** The start of the next event copied out of a large joined buffer, which it would otherwise keep whole (a 4 MiB payload's). */
  #compact(events: WyomingEvent[]): WyomingEvent[] {
    const kept = this.#buffer;
    if (kept.buffer.byteLength > 1024 * 1024 && kept.length < kept.buffer.byteLength / 2) this.#buffer = Buffer.from(kept);
    return events;
  }
}

function header(line: Buffer): { type: string; data: Record<string, unknown>; dataLength: number; payloadLength: number } {
  let value: unknown;
  try {
    value = JSON.parse(line.toString('utf8'));
  } catch {
    throw new WyomingError('wyoming_bad_event', 'a header line that is not JSON');
  }
  if (!isObject(value) || typeof value.type !== 'string' || value.type === '') throw new WyomingError('wyoming_bad_event', 'a header without a "type"');
  const length = (name: string, max: number): number => {
    const n = value[name] ?? 0;
    if (typeof n !== 'number' || !Number.isInteger(n) || n < 0) throw new WyomingError('wyoming_bad_event', `"${name}" is not a length`);
    if (n > max) throw new WyomingError('wyoming_bad_event', `"${name}" ${n} is over the limit of ${max} bytes`);
    return n;
  };
  const data = value.data ?? {};
  if (!isObject(data)) throw new WyomingError('wyoming_bad_event', '"data" is not an object');
  return { type: value.type, data, dataLength: length('data_length', MAX_DATA), payloadLength: length('payload_length', MAX_PAYLOAD) };
}

function segment(bytes: Buffer): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(bytes.toString('utf8'));
  } catch {
    throw new WyomingError('wyoming_bad_event', 'a data segment that is not JSON');
  }
  if (!isObject(value)) throw new WyomingError('wyoming_bad_event', 'a data segment that is not an object');
  return value;
}
