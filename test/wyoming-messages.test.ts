/**
 * Wyoming's messages typed once at the edge (src/wyoming/messages.ts), as the `wyoming`
 * library's classes are: what a peer sends becomes a typed message or a clear error, and what
 * IRIS writes is the wire's shape.
 */
import { describe, expect, it } from 'vitest';
import { EventReader, WyomingError } from '../src/wyoming/events.js';
import { decode, encode, type Message } from '../src/wyoming/messages.js';
import { toSpeech, wavMessages } from '../src/wyoming/audio.js';
import { encodeWav } from '../src/pipeline/wav.js';

const event = (type: string, data: Record<string, unknown> = {}, payload?: Buffer) => ({ type, data, ...(payload ? { payload } : {}) });
const thrown = (f: () => unknown): unknown => {
  try {
    f();
  } catch (error) {
    return error;
  }
  return undefined;
};

describe('Wyoming messages', () => {
  it('run-pipeline: stages checked as the library checks them (known, the end not before the start; the end tts when not said)', () => {
    expect(decode(event('run-pipeline', { start_stage: 'wake', end_stage: 'handle', restart_on_end: true }))).toEqual({ type: 'run-pipeline', start_stage: 'wake', end_stage: 'handle', restart_on_end: true });
    expect(decode(event('run-pipeline', { start_stage: 'asr' }))).toEqual({ type: 'run-pipeline', start_stage: 'asr', end_stage: 'tts', restart_on_end: false });
    for (const [data, message] of [
      [{ start_stage: 'asr', end_stage: 'wake' }, 'cannot end a pipeline started at asr at "wake"'],
      [{ start_stage: 'wake', end_stage: '__proto__' }, 'cannot end a pipeline started at wake at "__proto__"'],
      [{ start_stage: 'nonsense' }, 'cannot start a pipeline at "nonsense"'],
      [{ start_stage: 3 }, 'cannot start a pipeline at "3"'],
    ] as const) {
      const error = thrown(() => decode(event('run-pipeline', data)));
      expect(error).toBeInstanceOf(WyomingError);
      expect((error as WyomingError).message).toBe(message);
    }
  });

  it('a message missing what it is for is an error; optional fields are typed or left out; unknown types are not read', () => {
    expect(thrown(() => decode(event('transcript', { text: 7 })))).toMatchObject({ code: 'wyoming_bad_event', message: '"transcript" without a text' });
    expect(thrown(() => decode(event('synthesize')))).toMatchObject({ code: 'wyoming_bad_event' });
    expect(decode(event('transcript', { text: 'hi', context: { conversation_id: 'abc', other: 1 } }))).toEqual({ type: 'transcript', text: 'hi', context: { conversation_id: 'abc', other: 1 }, conversation_id: 'abc' });
    expect(decode(event('transcript', { text: 'hi', context: [1] }))).toEqual({ type: 'transcript', text: 'hi' });
    expect(decode(event('ping', { text: 5 }))).toEqual({ type: 'ping' });
    expect(decode(event('detection', { name: ['x'] }))).toEqual({ type: 'detection', name: '' });
    expect(decode(event('synthesize-chunk', {}))).toEqual({ type: 'synthesize-chunk', text: '' });
    expect(decode(event('info', { satellite: { name: 'Kitchen', area: 5 }, asr: [] }))).toEqual({ type: 'info', satellite: { name: 'Kitchen' }, data: { satellite: { name: 'Kitchen', area: 5 }, asr: [] } });
    expect(decode(event('info', { asr: [] }))).toEqual({ type: 'info', data: { asr: [] } });
    expect(decode(event('timer-updated', { id: '1' }))).toBeUndefined();
  });

  it('audio chunks: Wyoming\'s defaults, their payload, a format that is not a number refused where the audio is read', () => {
    const pcm = Buffer.from(new Int16Array([1, -2, 3]).buffer);
    const chunk = decode(event('audio-chunk', {}, pcm));
    expect(chunk).toEqual({ type: 'audio-chunk', rate: 16_000, width: 2, channels: 1, audio: pcm });
    if (chunk?.type !== 'audio-chunk') throw new Error('not a chunk');
    expect([...toSpeech(chunk)]).toEqual([1, -2, 3]);
    const odd = decode(event('audio-chunk', { rate: '16000' }, pcm));
    if (odd?.type !== 'audio-chunk') throw new Error('not a chunk');
    expect(thrown(() => toSpeech(odd))).toMatchObject({ code: 'wyoming_audio' });
    expect(decode(event('audio-chunk', { rate: 16_000, width: 2, channels: 1 }))).toMatchObject({ audio: Buffer.alloc(0) });
  });

  it('what IRIS writes reads back as the same message, with no field it did not set', () => {
    const sent: Message[] = [
      { type: 'detection', name: 'hey_jarvis', timestamp: 1200 },
      { type: 'transcript', text: 'what time is it' },
      { type: 'error', text: 'No speech was heard', code: 'stt-no-text-recognized' },
      { type: 'audio-chunk', rate: 22_050, width: 2, channels: 1, timestamp: 46, audio: Buffer.alloc(64, 1) },
      { type: 'synthesize-stopped' },
    ];
    const reader = new EventReader();
    const events = reader.push(Buffer.concat(sent.map(encode)));
    expect(events.map(decode)).toEqual(sent);
    const timer = reader.push(encode({ type: 'timer-started', id: '1', total_seconds: 3 }));
    expect(timer).toEqual([{ type: 'timer-started', data: { id: '1', total_seconds: 3 } }]);
    expect(encode({ type: 'played' }).toString()).toBe('{"type":"played","version":"1.9.0"}\n');
  });

  it('a WAV as audio-start, 2 KiB chunks stamped in ms, and audio-stop', () => {
    const wav = encodeWav(new Int16Array(22_050), { rate: 22_050, width: 2, channels: 1 }); // 1 s
    const { messages, seconds } = wavMessages(wav);
    expect(seconds).toBe(1);
    expect(messages[0]).toEqual({ type: 'audio-start', rate: 22_050, width: 2, channels: 1, timestamp: 0 });
    expect(messages.at(-1)).toEqual({ type: 'audio-stop', timestamp: 1000 });
    const chunks = messages.filter((m) => m.type === 'audio-chunk');
    expect(chunks).toHaveLength(Math.ceil(44_100 / 2048));
    expect(chunks[1]).toMatchObject({ timestamp: 46, audio: expect.any(Buffer) });
  });
});
