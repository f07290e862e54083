// The Wyoming server against hostile peers (issue 25, items 1–3), over real loopback sockets
// with the services faked at their seams (a conversation held until the test lets it answer, a
// voice that counts its syntheses, a wake-word detector that never fires): a peer queueing
// events behind a slow request is not read past the limit; a streamed text of 120 sentences is
// never 120 syntheses at once; an event trickled a byte at a time is closed at its deadline;
// trickling peers at the cap do not lock a newcomer out; audio sent at line speed is taken at
// its pace.
import { connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../src/log.js';
import type { TurnResult } from '../src/conversation/types.js';
import { Channel } from '../src/conversation/channel.js';
import type { TextToSpeech } from '../src/pipeline/tts.js';
import { encodeWav } from '../src/pipeline/wav.js';
import type { WakeWordDetector } from '../src/pipeline/wakeword.js';
import { encodeEvent, EventReader, type WyomingEvent } from '../src/wyoming/events.js';
import { serveWyoming, type WyomingOptions, type WyomingServices } from '../src/wyoming/server.js';

const FORMAT = { rate: 16_000, width: 2, channels: 1 };
const MiB = 1024 * 1024;

let closers: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const close of closers.reverse()) await close();
  closers = [];
});

/** A promise and the function that settles it. */
function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

interface Fakes {
  /** The conversation's reply to each transcript, when it comes. */
  reply?: (text: string) => Promise<string>;
  tts?: TextToSpeech;
  wake?: WakeWordDetector;
}

/** The server over faked services; its log lines, and a way to wait for one. */
async function serve(fakes: Fakes, options: WyomingOptions = {}) {
  const logs: string[] = [];
  const watchers: { pattern: RegExp; resolve: (line: string) => void }[] = [];
  const log = createLogger('wyoming', {
    level: 'debug',
    write: (line) => {
      logs.push(line);
      for (const w of watchers.filter((w) => w.pattern.test(line))) w.resolve(line);
    },
  });
  const services: WyomingServices = {
    info: () => ({ handle: [{ name: 'iris' }] }),
    conversation: () => (text) => {
      const sentences = new Channel<string>();
      const reply = (fakes.reply ?? (() => Promise.resolve('ok')))(text).finally(() => sentences.close());
      return { sentences, result: reply.then((r) => ({ reply: r }) as TurnResult) };
    },
    stt: () => Promise.reject(new Error('no speech to text here')),
    tts: () => fakes.tts ?? { synthesize: () => Promise.resolve(encodeWav(new Int16Array(160))) },
    wake: () => Promise.resolve({ detector: fakes.wake ?? silentDetector(), release: () => undefined }),
  };
  const server = await serveWyoming('tcp://127.0.0.1:0', services, log, options);
  closers.push(() => server.close());
  const logged = (pattern: RegExp) => {
    const found = logs.find((line) => pattern.test(line));
    if (found !== undefined) return Promise.resolve(found);
    return new Promise<string>((resolve) => watchers.push({ pattern, resolve }));
  };
  return { port: server.port, logs, logged };
}

const silentDetector = (frames = { count: 0 }): WakeWordDetector => ({
  word: 'hey_jarvis',
  process: () => {
    frames.count += 1;
    return Promise.resolve(undefined);
  },
  reset: () => undefined,
});

/** A peer: its events as they come, and a wait for the first of a type. */
async function peer(port: number) {
  const socket = connect(port, '127.0.0.1');
  closers.push(() => void socket.destroy());
  const reader = new EventReader();
  const events: WyomingEvent[] = [];
  const watchers: { type: string; resolve: (e: WyomingEvent) => void }[] = [];
  socket.on('data', (chunk: Buffer) => {
    for (const event of reader.push(chunk)) {
      events.push(event);
      for (const w of watchers.filter((w) => w.type === event.type)) w.resolve(event);
    }
  });
  socket.on('error', () => undefined);
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  const next = (type: string) => {
    const found = events.find((e) => e.type === type);
    if (found !== undefined) return Promise.resolve(found);
    return new Promise<WyomingEvent>((resolve) => watchers.push({ type, resolve }));
  };
  return { socket, events, next, closed };
}

/** Resolves to `value` after `ms`, to bound a wait that would otherwise hang when a fix is missing. */
const after = <T>(ms: number, value: T) => new Promise<T>((resolve) => setTimeout(() => resolve(value), ms).unref());

describe('a Wyoming peer cannot make IRIS hold without limit', () => {
  it('events sent behind a slow request are not read past the limit, and are read again once it is answered', async () => {
    const answer = deferred();
    const { port, logged } = await serve({ reply: async () => (await answer.promise, 'done') });
    const { socket, next } = await peer(port);
    socket.write(encodeEvent('transcript', { text: 'what is slow' }));
    // 40 events of 4 MiB (160 MiB), one payload shared so the test itself holds only one.
    const payload = Buffer.alloc(4 * MiB);
    const head = Buffer.from(`${JSON.stringify({ type: 'audio-chunk', data: FORMAT, payload_length: payload.length })}\n`);
    for (let i = 0; i < 40; i++) {
      socket.write(head);
      socket.write(payload);
    }
    const drained = new Promise<string>((resolve) => socket.once('drain', () => resolve('drained')));
    // With the limit the server says it stopped reading; without it, it reads everything and the peer's writes drain.
    const first = await Promise.race([logged(/waiting; not reading until they are handled/), drained]);
    expect(first).not.toBe('drained');
    expect(socket.writableLength).toBeGreaterThan(100 * MiB); // the rest waits on the peer's side
    answer.resolve();
    expect((await next('handled')).data.text).toBe('done');
    await drained; // read again: every chunk taken (and ignored: no transcription asked for them)
    socket.write(encodeEvent('describe'));
    expect((await next('info')).data).toEqual({ handle: [{ name: 'iris' }] });
  });

  it('a streamed text of 120 sentences is synthesised at most two sentences at a time, each said in order', async () => {
    let running = 0;
    let most = 0;
    const said: string[] = [];
    const tts: TextToSpeech = {
      synthesize: async (text) => {
        running += 1;
        most = Math.max(most, running);
        await new Promise((resolve) => setImmediate(resolve)); // a process takes a while; others could start meanwhile
        running -= 1;
        said.push(text);
        return encodeWav(new Int16Array(160));
      },
    };
    const { port } = await serve({ tts });
    const { socket, next, events } = await peer(port);
    const sentences = Array.from({ length: 120 }, (_, i) => `Sentence number ${i + 1}.`);
    socket.write(Buffer.concat([encodeEvent('synthesize-start'), encodeEvent('synthesize-chunk', { text: sentences.join(' ') }), encodeEvent('synthesize-stop')]));
    await next('synthesize-stopped');
    expect(most).toBe(2);
    expect(said).toEqual(sentences);
    expect(events.filter((e) => e.type === 'audio-stop')).toHaveLength(120);
  });

  it('a 1 MiB chunk of "A. " is taken a few sentences at a time while they are said, and stops with the connection', async () => {
    const calls: AbortSignal[] = [];
    const tts: TextToSpeech = {
      // Like espeak-ng held up: under way until the run is stopped.
      synthesize: (_text, signal) => {
        calls.push(signal ?? new AbortController().signal);
        return new Promise((_resolve, reject) => signal?.addEventListener('abort', () => reject(signal.reason as Error)));
      },
    };
    const { port } = await serve({ tts });
    const { socket } = await peer(port);
    socket.write(Buffer.concat([encodeEvent('synthesize-start'), encodeEvent('synthesize-chunk', { text: 'A. '.repeat(Math.floor((MiB - 20) / 3)) })]));
    while (calls.length < 2) await new Promise((resolve) => setImmediate(resolve));
    for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
    expect(calls).toHaveLength(2); // the second starts while the first is under way; no third until one is said
    socket.destroy();
    await Promise.all(calls.map((signal) => new Promise<void>((resolve) => (signal.aborted ? resolve() : signal.addEventListener('abort', () => resolve())))));
    for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
    expect(calls).toHaveLength(2); // the other 350,000 sentences were never asked for
  });
});

describe('trickling peers cannot hold IRIS', () => {
  it('an event still not whole at its deadline closes the connection, however often a byte comes', async () => {
    const { port, logs } = await serve({}, { eventMs: 300 });
    const { socket, next, closed } = await peer(port);
    const startMs = performance.now();
    socket.write('{');
    const trickle = setInterval(() => socket.write(' '), 50); // well inside the idle timeout
    try {
      const ended = await Promise.race([closed.then(() => 'closed'), after(5_000, 'still open')]);
      expect(ended).toBe('closed');
    } finally {
      clearInterval(trickle);
    }
    expect(performance.now() - startMs).toBeGreaterThanOrEqual(290);
    expect((await next('error')).data).toMatchObject({ code: 'wyoming_slow_event' });
    expect(logs.join('\n')).toMatch(/still not whole 0\.3 s after its first byte; connection closed/);
  });

  it('at the cap, a newcomer replaces the connection midway through an event and quiet longest, never one working on a request', async () => {
    const asked = deferred();
    const answer = deferred();
    const { port, logs } = await serve({ reply: async () => (asked.resolve(), await answer.promise, 'done') }, { maxConnections: 3 });
    const working = await peer(port); // the oldest, but busy
    working.socket.write(encodeEvent('transcript', { text: 'what is slow' }));
    await asked.promise;
    const trickling = [await peer(port), await peer(port)];
    for (const t of trickling) {
      // Heard from just now (a ping), then midway through an event: replaceable at once.
      t.socket.write(Buffer.concat([encodeEvent('ping'), Buffer.from('{"type": "des')]));
      await t.next('pong');
    }
    // Home Assistant's describe, twice (its first connection left open): each time the trickler
    // quiet longest makes room, never the working one nor Home Assistant's answered one.
    for (const t of trickling) {
      const ha = await peer(port);
      ha.socket.write(encodeEvent('describe'));
      expect((await Promise.race([ha.next('info'), ha.next('error')])).type).toBe('info');
      expect((await t.next('error')).data).toMatchObject({ code: 'busy' });
      await t.closed;
    }
    expect(logs.join('\n')).toMatch(/closed 127\.0\.0\.1 \(no whole event for \d+ s\) for a newcomer/);
    answer.resolve();
    expect((await working.next('handled')).data.text).toBe('done');
  });

  it('refuses a newcomer when every connection is working on a request', async () => {
    const asked = deferred();
    const answer = deferred();
    const { port } = await serve({ reply: async () => (asked.resolve(), await answer.promise, 'done') }, { maxConnections: 1, replaceQuietMs: 0 });
    const working = await peer(port);
    working.socket.write(encodeEvent('transcript', { text: 'what is slow' }));
    await asked.promise;
    const late = await peer(port);
    expect((await late.next('error')).data).toMatchObject({ code: 'busy' });
    answer.resolve();
    expect((await working.next('handled')).data.text).toBe('done');
  });

  it('a burst of newcomers does not push out connections heard from within the last 2 s', async () => {
    const { port } = await serve({}, { maxConnections: 2 });
    const held = [await peer(port), await peer(port)];
    for (const h of held) {
      h.socket.write(encodeEvent('describe'));
      await h.next('info');
    }
    const late = await peer(port);
    expect((await late.next('error')).data).toMatchObject({ code: 'busy' });
    for (const h of held) {
      h.socket.write(encodeEvent('ping', { text: 'still here' }));
      expect((await h.next('pong')).data).toEqual({ text: 'still here' });
    }
  });

  it('audio sent at line speed is taken at 1.5 × real time after its burst', async () => {
    const frames = { count: 0 };
    const { port } = await serve({ wake: silentDetector(frames) }, { audioBurstS: 0.5 });
    const { socket, next } = await peer(port);
    const pcm = Buffer.alloc(3 * 16_000 * 2); // 3 s of silence
    const chunks = [];
    for (let at = 0; at < pcm.length; at += 2048) chunks.push(encodeEvent('audio-chunk', FORMAT, pcm.subarray(at, at + 2048)));
    const startMs = performance.now();
    socket.write(Buffer.concat([encodeEvent('detect', { names: ['hey_jarvis'] }), encodeEvent('audio-start', FORMAT), ...chunks, encodeEvent('audio-stop')]));
    await next('not-detected');
    const tookS = (performance.now() - startMs) / 1000;
    // 0.5 s at once, the other 2.5 s at 1.5 s a second: 1.67 s; at line speed it took milliseconds.
    expect(tookS).toBeGreaterThan(1.5);
    expect(tookS).toBeLessThan(4);
    expect(frames.count).toBeGreaterThan(0);
  });
});
