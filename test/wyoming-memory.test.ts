// IRIS's Wyoming services, the two answers Home Assistant relies on beyond the happy path: an
// unsure transcript comes back empty (HA then asks again), and a question asked in one
// conversation_id is answered only in that conversation.
import { connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { encodeEvent, EventReader, type WyomingEvent } from '../src/wyoming/events.js';
import type { WyomingOptions } from '../src/wyoming/server.js';
import { serveIris, type Served } from './helpers/wyoming.js';
import { speechSamples } from './helpers/speech.js';

let served: Served | undefined;
afterEach(async () => {
  await served?.stop();
  served = undefined;
});

async function serve(options: WyomingOptions = {}): Promise<Served> {
  served = await serveIris(options);
  return served;
}

/** One connection, as Home Assistant opens one per request: send `events`, read until `until`. */
async function request(port: number, events: Buffer[], until: string): Promise<WyomingEvent> {
  const socket = connect(port, '127.0.0.1');
  const reader = new EventReader();
  try {
    return await new Promise<WyomingEvent>((resolve, reject) => {
      socket.on('data', (chunk: Buffer) => {
        const hit = reader.push(chunk).find((e) => e.type === until || e.type === 'error');
        if (hit) resolve(hit);
      });
      socket.on('error', reject);
      socket.on('close', () => reject(new Error(`closed before ${until}`)));
      for (const event of events) socket.write(event);
    });
  } finally {
    socket.destroy();
  }
}

const handle = (port: number, text: string, id: string) => request(port, [encodeEvent('transcript', { text, context: { conversation_id: id } })], 'handled');

describe('Home Assistant against IRIS: the answers it relies on', () => {
  it('an unsure transcript comes back empty, and the log says what was heard', async () => {
    const { port, logs } = await serve();
    // Out of the grammar: pocketsphinx forces it into a command ("what is thirty over eight"),
    // with a low confidence.
    const samples = speechSamples('what is the capital of france');
    const pcm = Buffer.from(samples.buffer, samples.byteOffset, samples.byteLength);
    const format = { rate: 16_000, width: 2, channels: 1 };
    const chunks = [];
    for (let at = 0; at < pcm.length; at += 2048) chunks.push(encodeEvent('audio-chunk', format, pcm.subarray(at, at + 2048)));
    const got = await request(port, [encodeEvent('transcribe', { language: 'en' }), encodeEvent('audio-start', format), ...chunks, encodeEvent('audio-stop')], 'transcript');
    expect(got.data).toMatchObject({ text: '' });
    expect(logs.join('\n')).toMatch(/wyoming: ".+" heard at confidence 0\.\d+; answered as not understood/);
  });

  it('a question is answered in its own conversation only', async () => {
    const { port, s } = await serve();
    for (const label of ['tea', 'pasta']) await s.iris.host.call('set_timer', { duration: 'PT5M', label });
    const asked = await handle(port, 'cancel all timers', 'kitchen');
    expect(String(asked.data.text)).toMatch(/\?.*yes or no/i);
    // "yes" in another conversation is no answer to it: nothing is cancelled.
    const elsewhere = await handle(port, 'yes', 'bedroom');
    expect(String(elsewhere.data.text)).not.toMatch(/cancel/i);
    expect((await s.iris.host.call('list_timers', {})).structuredContent?.timers).toHaveLength(2);
    const done = await handle(port, 'yes', 'kitchen');
    expect(String(done.data.text)).toMatch(/cancel/i);
    expect((await s.iris.host.call('list_timers', {})).structuredContent?.timers).toHaveLength(0);
  });
});
