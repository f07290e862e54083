// IRIS's Wyoming services, driven as Home Assistant drives them (test/helpers/ha-client.ts,
// written from the protocol on the project's own wire code), and by hostile raw sockets.
import { readFileSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { encodeEvent, EventReader, type WyomingEvent } from '../src/wyoming/events.js';
import { serveWyoming, type WyomingOptions, type WyomingServices } from '../src/wyoming/server.js';
import { serveIris, type Served } from './helpers/wyoming.js';
import { withDouble } from './helpers/conversation.js';
import { createLogger } from '../src/log.js';
import { Conversations } from '../src/daemon/conversations.js';
import { irisServices } from '../src/wyoming/services.js';
import { commandSamples, commandWav } from './helpers/speech.js';
import { decodeWav } from '../src/pipeline/wav.js';
import { startIris, waitForLine } from './helpers/cli.js';
import { closedPort } from './helpers/net.js';
import { tempDir } from './helpers/tmp.js';
import { homeAssistant } from './helpers/ha-client.js';

let served: Served | undefined;
afterEach(async () => {
  await served?.stop();
  served = undefined;
});

async function serve(options: WyomingOptions = {}): Promise<Served> {
  served = await serveIris(options);
  return served;
}

const pcm = (samples: Int16Array): Buffer => Buffer.from(samples.buffer, samples.byteOffset, samples.byteLength);

describe('Home Assistant against IRIS', () => {
  it('describe, handle with memory per conversation, synthesize (also streamed), transcribe, detect', async () => {
    const { port, s } = await serve();
    const ha = homeAssistant(port);
    const info = await ha.describe() as {
      handle: { name: string }[]; asr: { name: string }[]; tts: { voices: { name: string }[]; supports_synthesize_streaming?: boolean }[];
      wake: { models: { phrase: string }[] }[];
    };
    expect({
      handle: info.handle.map((p) => p.name), asr: info.asr.map((p) => p.name), tts: info.tts.flatMap((p) => p.voices.map((v) => v.name)),
      wake: info.wake.flatMap((p) => p.models.map((m) => m.phrase)), streaming_tts: info.tts[0]?.supports_synthesize_streaming,
    }).toEqual({ handle: ['iris'], asr: ['iris-stt'], tts: ['en-us'], wake: ['hey jarvis'], streaming_tts: true });

    const handled = [];
    for (const text of ['what is 6 times 7', 'set a tea timer for 3 minutes']) handled.push(await ha.handle(text, '01JDTEST'));
    expect(handled.map((e) => ({ type: e.type, ...e.data }))).toEqual([
      { type: 'handled', text: "That's 42.", context: { conversation_id: '01JDTEST' } },
      { type: 'handled', text: 'Tea timer set for 3 minutes.', context: { conversation_id: '01JDTEST' } },
    ]);
    expect((await s.iris.host.call('list_timers', {})).structuredContent?.timers).toEqual([expect.objectContaining({ label: 'tea' })]);

    const plain = await ha.synthesize('Hello from IRIS.');
    expect(plain).toMatchObject({ format: { rate: 22050, width: 2, channels: 1 }, sentences: 1 });
    expect(plain.pcm.length).toBeGreaterThan(20_000);
    const streamed = await ha.synthesizeStreaming(['First sentence here. Sec', 'ond sentence there.']);
    expect(streamed.sentences).toBe(2);
    expect(streamed.pcm.length).toBeGreaterThan(20_000);

    const transcript = await ha.transcribe(pcm(commandSamples('what time is it')));
    expect({ type: transcript.type, text: transcript.data.text }).toEqual({ type: 'transcript', text: 'what time is it' });
    const detection = await ha.detect(pcm(commandSamples('hey jarvis')), ['hey_jarvis']);
    expect({ type: detection.type, name: detection.data.name }).toEqual({ type: 'detection', name: 'hey_jarvis' });
    const silence = await ha.detect(Buffer.alloc(32_000));
    expect(silence.type).toBe('not-detected');
  }, 120_000);
});

/** A raw peer: what it is sent, and everything until the server closes the connection. */
function peer(port: number): { socket: Socket; events: Promise<WyomingEvent[]> } {
  const socket = connect(port, '127.0.0.1');
  const reader = new EventReader();
  const events: WyomingEvent[] = [];
  socket.on('data', (chunk: Buffer) => events.push(...reader.push(chunk)));
  socket.on('error', () => undefined);
  return { socket, events: new Promise((resolve) => socket.on('close', () => resolve(events))) };
}

async function describeWorks(port: number): Promise<boolean> {
  const { socket, events } = peer(port);
  socket.write(encodeEvent('describe'));
  const got = await new Promise<boolean>((resolve) => {
    const reader = new EventReader();
    socket.on('data', (chunk: Buffer) => resolve(reader.push(chunk).some((e) => e.type === 'info')));
  });
  socket.destroy();
  await events;
  return got;
}

describe('bad peers', () => {
  it.each([
    ['a header that is not JSON', Buffer.from('this is not json\n'), /not JSON/],
    ['a 100 MB payload', Buffer.from('{"type":"audio-chunk","payload_length":104857600}\n'), /over the limit/],
    ['a data_length that is not a length', Buffer.from('{"type":"describe","data_length":-5}\n'), /not a length/],
    ['a header line with no end', Buffer.alloc(70 * 1024, 0x61), /longer than/],
  ])('%s: an error event, that connection closed, the server serves on', async (_what, bytes, why) => {
    const { port } = await serve();
    const { socket, events } = peer(port);
    socket.write(bytes);
    const got = await events;
    expect(got.map((e) => e.type)).toEqual(['error']);
    expect(String(got[0]?.data.text)).toMatch(why);
    expect(await describeWorks(port)).toBe(true);
  });

  it('a data_length that lies (promises more than it sends) is closed when it idles', async () => {
    const { port } = await serve({ idleMs: 200 });
    const { socket, events } = peer(port);
    socket.write('{"type":"transcript","data_length":500}\n{"text": "hi"}');
    expect(await events).toEqual([]);
    expect(await describeWorks(port)).toBe(true);
  });

  it('a peer that stops reading is dropped; 100 connections at once: the cap refuses the rest plainly', async () => {
    const { port, logs } = await serve({ maxUnreadBytes: 16 * 1024, maxConnections: 8 });
    const { socket } = peer(port);
    socket.pause(); // never reads: the kernel's buffers fill, then IRIS's
    for (let i = 0; i < 100; i++) socket.write(encodeEvent('synthesize', { text: `Sentence number ${i} is quite a long one to say out loud.` }));
    await expect.poll(() => logs.some((l) => /stopped reading; dropped/.test(l)), { timeout: 30_000 }).toBe(true);
    socket.destroy();
    const many = Array.from({ length: 100 }, () => peer(port));
    const refused = await Promise.all(many.slice(8).map(async ({ events: e }) => (await e)[0]?.data.code));
    expect(refused.every((code) => code === 'busy')).toBe(true);
    for (const { socket: s2 } of many) s2.destroy();
    await Promise.all(many.map((m) => m.events));
    expect(await describeWorks(port)).toBe(true);
  }, 60_000);
});

describe('each request a run of the pipeline', () => {
  it('a connection that closes mid-turn aborts its run: the model request is dropped, the server serves on', async () => {
    const { port, s } = await serve();
    s.double.script({ content: ['Here is a long story. ', ...Array.from({ length: 20 }, (_v, i) => `Sentence ${i + 1}. `)], pieceDelayMs: 300 });
    const { socket, events } = peer(port);
    socket.write(encodeEvent('transcript', { text: 'tell me a long story', context: { conversation_id: 'gone' } }));
    await expect.poll(() => s.double.chats.length, { timeout: 10_000 }).toBe(1);
    socket.destroy(); // Home Assistant gave up on the answer
    await events;
    await expect.poll(() => s.double.cancelled, { timeout: 10_000 }).toBe(1);
    expect(await describeWorks(port)).toBe(true);
  });

  it('a detect begun again before the audio ended: the first run ends and frees its detector, the second hears the wake word once', async () => {
    const s = await withDouble();
    const log = createLogger('wyoming', { write: () => undefined });
    const services = irisServices(() => s.iris.config, new Conversations(() => s.iris.conversation()), log);
    let released = 0;
    const counted = { ...services, wake: async () => {
      const got = await services.wake();
      return { detector: got.detector, release: () => (released++, got.release()) };
    } };
    const server = await serveWyoming('tcp://127.0.0.1:0', counted, log);
    try {
      const { socket, events } = peer(server.port);
      const wav = decodeWav(readFileSync(commandWav('hey jarvis')));
      const chunk = (samples: Int16Array) => encodeEvent('audio-chunk', { rate: 16_000, width: 2, channels: 1 }, Buffer.from(samples.buffer, samples.byteOffset, samples.byteLength));
      socket.write(encodeEvent('detect', { names: ['hey_jarvis'] }));
      socket.write(chunk(new Int16Array(8_000)));
      socket.write(encodeEvent('detect', { names: ['hey_jarvis'] }));
      for (let i = 0; i < wav.length; i += 1024) socket.write(chunk(wav.slice(i, i + 1024)));
      socket.write(chunk(new Int16Array(16_000)));
      socket.write(encodeEvent('audio-stop'));
      socket.write(encodeEvent('describe'));
      await new Promise<void>((resolve) => {
        const reader = new EventReader();
        socket.on('data', (c: Buffer) => reader.push(c).some((e) => e.type === 'info') && resolve());
      });
      expect(released).toBe(2); // both, while the connection is still open
      socket.destroy();
      const types = (await events).map((e) => e.type);
      expect(types.filter((t) => t === 'detection' || t === 'not-detected')).toEqual(['detection']);
    } finally {
      await server.close();
      await s.iris.stop();
      await s.double.close();
    }
  });
});

describe('runs over one connection, against stub engines', () => {
  const quiet = createLogger('wyoming', { write: () => undefined });
  const chunk = (samples: number) => encodeEvent('audio-chunk', { rate: 16_000, width: 2, channels: 1 }, Buffer.alloc(samples * 2));
  /** A detector that hears the wake word in the `at`th frame it is given since its reset, slowly (30 ms a frame). */
  function slowDetector(at: number) {
    let frames = 0;
    return {
      word: 'hey_jarvis',
      reset: () => void (frames = 0),
      async process(c: { atS: number }) {
        await new Promise((r) => setTimeout(r, 30));
        frames += 1;
        return frames === at ? { word: 'hey_jarvis', score: 0.9, atS: c.atS + 0.08 } : undefined;
      },
    };
  }
  const stubs = (extra: Partial<WyomingServices>): WyomingServices => ({
    info: () => ({}),
    conversation: () => { throw new Error('no conversation here'); },
    stt: () => Promise.resolve({ stt: { name: 'stub', transcribe: () => Promise.resolve({ text: 'what time is it', confidence: 1 }) }, minConfidence: 0 }),
    tts: () => { throw new Error('no voice here'); },
    wake: () => Promise.reject(new Error('no wake word here')),
    ...extra,
  });
  async function connected(port: number) {
    const { socket, events } = peer(port);
    const types: string[] = [];
    const reader = new EventReader();
    socket.on('data', (c: Buffer) => types.push(...reader.push(c).map((e) => e.type)));
    await new Promise((resolve) => socket.once('connect', resolve));
    const next = (type: string) => new Promise<void>((resolve) => {
      const check = () => (types.includes(type) ? resolve() : socket.once('data', () => setImmediate(check)));
      check();
    });
    return { socket, events, types, next };
  }

  it('a peer that closes during streamed synthesis: its run ends, nothing is left unhandled, the server serves on', async () => {
    // A voice still working on the sentence when the peer goes: it ends only when aborted.
    const synthesized: Promise<Buffer>[] = [];
    const tts = { synthesize: (_text: string, signal?: AbortSignal) => {
      const wav = new Promise<Buffer>((_resolve, reject) => signal?.addEventListener('abort', () => reject(signal.reason as Error), { once: true }));
      synthesized.push(wav);
      return wav;
    } };
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    const server = await serveWyoming('tcp://127.0.0.1:0', stubs({ tts: () => tts }), quiet);
    try {
      const { socket, events } = await connected(server.port);
      socket.write(encodeEvent('synthesize-start'));
      socket.write(encodeEvent('synthesize-chunk', { text: 'This is a rather long first sentence that takes a moment to say, with several clauses in it. And a second one. ' }));
      await expect.poll(() => synthesized.length, { timeout: 10_000 }).toBeGreaterThan(0);
      socket.destroy(); // Home Assistant gave up mid-sentence
      await events;
      await Promise.allSettled(synthesized);
      await new Promise(setImmediate);
      await new Promise(setImmediate);
      expect(unhandled).toEqual([]);
      expect(await describeWorks(server.port)).toBe(true);
    } finally {
      process.off('unhandledRejection', onUnhandled);
      await server.close();
    }
  });

  it('a detect replaced by a transcribe says nothing more: the peer gets the transcript only', async () => {
    let released: () => void = () => undefined;
    const runOver = new Promise<void>((resolve) => (released = resolve));
    const server = await serveWyoming('tcp://127.0.0.1:0', stubs({ wake: () => Promise.resolve({ detector: slowDetector(5), release: () => released() }) }), quiet);
    try {
      const { socket, types, next } = await connected(server.port);
      socket.write(encodeEvent('detect', { names: ['hey_jarvis'] }));
      socket.write(chunk(1280 * 8)); // the wake word is in here (frame 5), not read yet
      socket.write(encodeEvent('transcribe'));
      socket.write(chunk(1600));
      socket.write(encodeEvent('audio-stop'));
      await runOver; // the wake-word run has ended
      socket.write(encodeEvent('describe'));
      await next('info');
      expect(types).toEqual(['transcript', 'info']);
      socket.destroy();
    } finally {
      await server.close();
    }
  });

  it('many detections on one connection leave no listeners behind (no leak warning)', async () => {
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(w.name);
    process.on('warning', onWarning);
    const server = await serveWyoming('tcp://127.0.0.1:0', stubs({ wake: () => Promise.resolve({ detector: slowDetector(1), release: () => undefined }) }), quiet);
    try {
      const { socket, types, next } = await connected(server.port);
      for (let i = 0; i < 15; i++) {
        socket.write(encodeEvent('detect', { names: ['hey_jarvis'] }));
        socket.write(chunk(1280 * 3));
        socket.write(encodeEvent('audio-stop'));
        socket.write(encodeEvent('ping', { text: String(i) }));
        await expect.poll(() => types.filter((t) => t === 'pong').length).toBe(i + 1);
      }
      await next('pong');
      expect(types.filter((t) => t === 'detection').length).toBe(15);
      await new Promise(setImmediate);
      expect(warnings.filter((w) => w === 'MaxListenersExceededWarning')).toEqual([]);
      socket.destroy();
    } finally {
      process.off('warning', onWarning);
      await server.close();
    }
  });
});

describe('the daemon', () => {
  it('serves Wyoming when [wyoming] listen is set, and stops cleanly', async () => {
    const port = await closedPort();
    const dir = tempDir();
    writeFileSync(join(dir, 'config'), `[assistant]\ntimezone = "UTC"\n[audio]\ninput = ""\n[wyoming]\nlisten = "tcp://127.0.0.1:${port}"\n`);
    const daemon = startIris(['daemon'], { IRIS_CONFIG: join(dir, 'config'), IRIS_STATE_DIR: join(dir, 'state'), IRIS_SOCKET: join(dir, 'control.sock') });
    try {
      await Promise.all([waitForLine(daemon, /ready:/), waitForLine(daemon, new RegExp(`wyoming services on tcp://127\\.0\\.0\\.1:${port}`))]);
      expect(await describeWorks(port)).toBe(true);
      const exited = new Promise((resolve) => daemon.once('exit', resolve));
      daemon.kill('SIGTERM');
      expect(await exited).toBe(0);
    } finally {
      daemon.kill('SIGKILL');
    }
  });
});
