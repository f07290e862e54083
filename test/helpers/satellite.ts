/**
 * A Wyoming satellite on loopback for benchmarks and tests that need exact timing: it behaves as
 * wyoming-satellite does in its always-streaming mode (info, run-pipeline from the wake stage,
 * 1,024-sample chunks at real-time pace, pong, `played` after each reply) and stamps what
 * arrives. The real satellite (test/rooms.test.ts) is the truth; this one measures.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { encodeEvent, EventReader } from '../../src/wyoming/events.js';

const CHUNK = 1024; // samples, as wyoming-satellite sends them

/** Streams silence, or a command when told, and stamps IRIS's events. */
export class StreamingSatellite {
  readonly server: Server;
  port = 0;
  #socket: Socket | undefined;
  #queue: Int16Array[] = [];
  #timer: NodeJS.Timeout | undefined;
  #waiters: { type: string; resolve: (atMs: number) => void }[] = [];
  /** When the stream began (performance.now()): chunk n is due at this + n × 64 ms. */
  #streamStartMs = NaN;
  #sent = 0;
  /** Connections IRIS made (a reconnect is a second one). */
  connections = 0;
  /** How late the latest chunk left against its due time (ms): this process's own lag, not IRIS's. */
  lateMs = 0;
  /** Every event IRIS sent, in order: its type, data, payload size and when it arrived (performance.now()). */
  readonly received: { type: string; data: Record<string, unknown>; bytes: number; atMs: number }[] = [];

  /** `pipeline`: the run-pipeline it asks for (default from wake to tts, as wyoming-satellite does). */
  constructor(
    readonly name: string,
    readonly pipeline: Record<string, unknown> = { start_stage: 'wake', end_stage: 'tts', restart_on_end: true },
  ) {
    this.server = createServer((socket) => this.#serve(socket));
  }

  async listen(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as { port: number }).port;
    return this;
  }

  /** Speak `samples` into the stream from the next chunk on; returns the stream second they start at. */
  say(samples: Int16Array): number {
    const startS = ((this.#sent + this.#queue.length) * CHUNK) / 16_000;
    for (let i = 0; i < samples.length; i += CHUNK) {
      const chunk = new Int16Array(CHUNK);
      chunk.set(samples.subarray(i, i + CHUNK));
      this.#queue.push(chunk);
    }
    return startS;
  }

  /** When the audio at stream second `streamS` was due to leave (performance.now() ms; NaN before the stream began). */
  sentAtMs(streamS: number): number {
    return this.#streamStartMs + streamS * 1000;
  }

  /** performance.now() when the next event of `type` arrives. */
  next(type: string): Promise<number> {
    return new Promise((resolve) => this.#waiters.push({ type, resolve }));
  }

  close(): void {
    clearTimeout(this.#timer);
    this.#socket?.destroy();
    this.server.close();
  }

  #serve(socket: Socket): void {
    this.#socket = socket;
    this.connections += 1;
    socket.on('error', () => undefined);
    const reader = new EventReader();
    socket.on('data', (chunk: Buffer) => {
      const now = performance.now();
      for (const event of reader.push(chunk)) {
        this.received.push({ type: event.type, data: event.data, bytes: event.payload?.length ?? 0, atMs: now });
        for (const w of this.#waiters.filter((x) => x.type === event.type)) w.resolve(now);
        this.#waiters = this.#waiters.filter((x) => x.type !== event.type);
        if (event.type === 'describe') socket.write(encodeEvent('info', { satellite: { name: this.name, installed: true } }));
        if (event.type === 'ping') socket.write(encodeEvent('pong'));
        if (event.type === 'audio-stop') socket.write(encodeEvent('played'));
        if (event.type === 'run-satellite') {
          socket.write(encodeEvent('run-pipeline', this.pipeline));
          this.#stream(socket);
        }
      }
    });
  }

  /** Real-time pace: chunk n leaves at start + n × 64 ms. */
  #stream(socket: Socket): void {
    const start = performance.now();
    this.#streamStartMs = start;
    this.#sent = 0;
    const tick = () => {
      if (socket.destroyed) return;
      this.lateMs = performance.now() - (start + (this.#sent * CHUNK * 1000) / 16_000);
      const samples = this.#queue.shift() ?? new Int16Array(CHUNK);
      socket.write(encodeEvent('audio-chunk', { rate: 16_000, width: 2, channels: 1 }, Buffer.from(samples.buffer)));
      this.#sent += 1;
      this.#timer = setTimeout(tick, Math.max(0, start + (this.#sent * CHUNK * 1000) / 16_000 - performance.now()));
    };
    tick();
  }
}

