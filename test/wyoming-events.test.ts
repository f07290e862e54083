// Wyoming framing read back from a stream cut anywhere: headers split byte by byte, a payload
// arriving in many small chunks (joined once, not at every chunk), several events in one chunk.
import { describe, expect, it } from 'vitest';
import { encodeEvent, EventReader } from '../src/wyoming/events.js';

describe('reading Wyoming events from a stream', () => {
  it('gives the same events however the bytes are cut', () => {
    const payload = Buffer.alloc(4 * 1024 * 1024 - 1, 7);
    payload[0] = 1;
    payload[payload.length - 1] = 9;
    const stream = Buffer.concat([
      encodeEvent('audio-start', { rate: 16000, width: 2, channels: 1 }),
      encodeEvent('audio-chunk', { rate: 16000, width: 2, channels: 1 }, payload),
      encodeEvent('audio-stop'),
      encodeEvent('ping', { text: 'x' }),
    ]);
    for (const size of [1, 1000, 64 * 1024, stream.length]) {
      const reader = new EventReader();
      const events = [];
      for (let at = 0; at < stream.length; at += size) events.push(...reader.push(stream.subarray(at, at + size)));
      expect(events.map((e) => e.type), `cut every ${size} bytes`).toEqual(['audio-start', 'audio-chunk', 'audio-stop', 'ping']);
      const chunk = events[1]?.payload;
      expect(chunk?.length).toBe(payload.length);
      expect([chunk?.[0], chunk?.[1], chunk?.[chunk.length - 1]]).toEqual([1, 7, 9]);
      expect(events[3]?.data).toEqual({ text: 'x' });
    }
  });
});
