// The Wyoming wire format, byte for byte, from the protocol's own description (the `wyoming`
// library's writer and reader, shared/notes/wyoming.md §1, and the audio chunk captured there
// from a real satellite): the test peers' codec (test/helpers/wyoming-wire.ts) and IRIS's
// (src/wyoming/events.ts) are each held to it, so a peer that shared IRIS's mistake would fail.
import { describe, expect, it } from 'vitest';
import { encodeEvent, EventReader } from '../src/wyoming/events.js';
import { eventBytes, WireReader, type PeerEvent } from './helpers/wyoming-wire.js';

const PCM = Buffer.from(Array.from({ length: 2048 }, (_v, i) => (i * 7) % 256));

/**
 * Events as the reference writer (json.dumps, ensure_ascii=False; empty data and empty payloads
 * left out) puts them on the wire.
 */
const TABLE: { what: string; event: PeerEvent; version?: string; bytes: Buffer }[] = [
  { what: 'no data: no data_length, no segment', event: { type: 'describe', data: {} }, bytes: Buffer.from('{"type": "describe", "version": "1.9.0"}\n') },
  {
    what: 'data in its own segment, nested objects',
    event: { type: 'transcript', data: { text: 'what time is it', context: { conversation_id: '01JDTEST' } } },
    bytes: Buffer.from('{"type": "transcript", "version": "1.9.0", "data_length": 71}\n{"text": "what time is it", "context": {"conversation_id": "01JDTEST"}}'),
  },
  {
    what: 'non-ASCII text: data_length counts UTF-8 bytes, not characters',
    event: { type: 'synthesize', data: { text: 'Grüße aus São Paulo' } },
    bytes: Buffer.from('{"type": "synthesize", "version": "1.9.0", "data_length": 34}\n{"text": "Grüße aus São Paulo"}', 'utf8'),
  },
  {
    what: 'booleans and a nested format',
    event: { type: 'run-pipeline', data: { start_stage: 'wake', end_stage: 'tts', restart_on_end: true, snd_format: { rate: 22050, width: 2, channels: 1 } } },
    version: '1.5.4',
    bytes: Buffer.from('{"type": "run-pipeline", "version": "1.5.4", "data_length": 125}\n{"start_stage": "wake", "end_stage": "tts", "restart_on_end": true, "snd_format": {"rate": 22050, "width": 2, "channels": 1}}'),
  },
  {
    what: 'a null field is written as null',
    event: { type: 'detection', data: { name: 'hey_jarvis', timestamp: null } },
    bytes: Buffer.from('{"type": "detection", "version": "1.9.0", "data_length": 41}\n{"name": "hey_jarvis", "timestamp": null}'),
  },
  {
    what: 'an audio chunk as captured from wyoming-satellite: data, then 2048 bytes of PCM',
    event: { type: 'audio-chunk', data: { rate: 16000, width: 2, channels: 1, timestamp: 4894895208169 }, payload: PCM },
    version: '1.5.4',
    bytes: Buffer.concat([Buffer.from('{"type": "audio-chunk", "version": "1.5.4", "data_length": 70, "payload_length": 2048}\n{"rate": 16000, "width": 2, "channels": 1, "timestamp": 4894895208169}'), PCM]),
  },
];

/** Every event `reader` gives for `bytes` cut into pieces of `size`. */
function readAll(push: (chunk: Buffer) => { type: string; data: Record<string, unknown>; payload?: Buffer }[], bytes: Buffer, size: number) {
  const out = [];
  for (let at = 0; at < bytes.length; at += size) out.push(...push(bytes.subarray(at, at + size)));
  return out.map((e) => ({ type: e.type, data: e.data, ...(e.payload ? { payload: e.payload } : {}) }));
}

describe('the wire format, from the protocol', () => {
  it.each(TABLE)('the peers write $what byte for byte', ({ event, version, bytes }) => {
    expect(eventBytes(event, version).toString('latin1')).toBe(bytes.toString('latin1'));
  });

  it.each(TABLE)('IRIS writes $what in the same layout (its JSON spacing aside)', ({ event, bytes }) => {
    const ours = encodeEvent(event.type, event.data, event.payload);
    const line = (b: Buffer) => JSON.parse(b.subarray(0, b.indexOf(0x0a)).toString('utf8')) as Record<string, unknown>;
    const theirs = line(bytes);
    const mine = line(ours);
    // Same keys in the same order; the lengths are those of IRIS's own (more compact) segment.
    expect(Object.keys(mine)).toEqual(Object.keys(theirs));
    expect(mine.type).toBe(event.type);
    const dataBytes = Object.keys(event.data).length > 0 ? Buffer.byteLength(JSON.stringify(event.data), 'utf8') : undefined;
    expect(mine.data_length).toBe(dataBytes);
    expect(mine.payload_length).toBe(theirs.payload_length);
    expect(ours.length).toBe(ours.indexOf(0x0a) + 1 + (dataBytes ?? 0) + (event.payload?.length ?? 0));
    // And the reference reader (the peers') reads it back as the event.
    expect(new WireReader().push(ours)).toEqual([event]);
  });

  const stream = Buffer.concat(TABLE.map((t) => t.bytes));
  const expected = TABLE.map((t) => t.event);
  it.each([1, 2, 3, 7, 64, 1000, stream.length])('both readers read the whole table cut every %i bytes: headers, data and payloads split across reads', (size) => {
    const peer = new WireReader();
    const iris = new EventReader();
    expect(readAll((c) => peer.push(c), stream, size)).toEqual(expected);
    expect(readAll((c) => iris.push(c), stream, size)).toEqual(expected);
  });

  it('data in the header line is merged under the data segment, which wins where both have a key', () => {
    const bytes = Buffer.from('{"type": "transcript", "data": {"text": "inline", "language": "en"}, "data_length": 19}\n{"text": "segment"}');
    const want = [{ type: 'transcript', data: { text: 'segment', language: 'en' } }];
    expect(new WireReader().push(bytes)).toEqual(want);
    expect(new EventReader().push(bytes)).toEqual(want);
  });

  it('a header with only inline data (no segment) and a payload_length of 0 carry no payload', () => {
    const bytes = Buffer.from('{"type": "ping", "data": {"text": "x"}, "payload_length": 0}\n{"type": "pong"}\n');
    const want = [{ type: 'ping', data: { text: 'x' } }, { type: 'pong', data: {} }];
    expect(new WireReader().push(bytes)).toEqual(want);
    expect(new EventReader().push(bytes)).toEqual(want);
  });

  it('a length that is not a whole number is refused by both', () => {
    for (const bad of ['{"type": "x", "data_length": -1}\n', '{"type": "x", "payload_length": 1.5}\n', '{"type": "x", "data_length": "3"}\n']) {
      expect(() => new WireReader().push(Buffer.from(bad)), bad).toThrow(/not a length/);
      expect(() => new EventReader().push(Buffer.from(bad)), bad).toThrow(/not a length/);
    }
  });
});
