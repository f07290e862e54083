/**
 * Home Assistant's side of Wyoming, as its `wyoming` integration uses IRIS's services
 * (shared/notes/wyoming.md §5): one TCP connection per request, `describe` → `info`, a
 * conversation agent fed `transcript` with a `conversation_id`, text to speech (plain and
 * streamed), speech to text over a recording, and wake-word detection. Written from the
 * protocol on this project's own wire code (wyoming-wire.ts), not IRIS's.
 */
import { connect, type Socket } from 'node:net';
import { eventBytes, HA_VERSION, WireReader, type PeerEvent } from './wyoming-wire.js';

/** Home Assistant sends audio in chunks of this many bytes. */
const CHUNK_BYTES = 2048;
const FORMAT = { rate: 16_000, width: 2, channels: 1 };

/** One connection: send events, read them one at a time (undefined once the server closed). */
export class Connection {
  readonly #socket: Socket;
  readonly #reader = new WireReader();
  readonly #arrived: PeerEvent[] = [];
  #waiting: ((event: PeerEvent | undefined) => void) | undefined;
  #closed = false;

  private constructor(socket: Socket, readonly version: string) {
    this.#socket = socket;
    socket.on('data', (chunk: Buffer) => {
      for (const event of this.#reader.push(chunk)) this.#deliver(event);
    });
    const end = () => {
      this.#closed = true;
      this.#waiting?.(undefined);
      this.#waiting = undefined;
    };
    socket.on('close', end);
    socket.on('error', end);
  }

  static open(port: number, version = HA_VERSION): Promise<Connection> {
    return new Promise((resolve, reject) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => resolve(new Connection(socket, version)));
      socket.once('error', reject);
    });
  }

  send(type: string, data: Record<string, unknown> = {}, payload?: Buffer): void {
    if (!this.#socket.destroyed) this.#socket.write(eventBytes({ type, data, ...(payload ? { payload } : {}) }, this.version));
  }

  /** The next event, or undefined when the server closed the connection. */
  next(): Promise<PeerEvent | undefined> {
    const ready = this.#arrived.shift();
    if (ready !== undefined) return Promise.resolve(ready);
    if (this.#closed) return Promise.resolve(undefined);
    return new Promise((resolve) => (this.#waiting = resolve));
  }

  close(): void {
    this.#socket.destroy();
  }

  #deliver(event: PeerEvent): void {
    const waiting = this.#waiting;
    this.#waiting = undefined;
    if (waiting) waiting(event);
    else this.#arrived.push(event);
  }
}

/** A request on its own connection, as Home Assistant opens one per request. */
async function request<T>(port: number, run: (c: Connection) => Promise<T>): Promise<T> {
  const c = await Connection.open(port);
  try {
    return await run(c);
  } finally {
    c.close();
  }
}

async function required(c: Connection): Promise<PeerEvent> {
  const event = await c.next();
  if (event === undefined) throw new Error('the server closed the connection before answering');
  return event;
}

/** `audio-start`, the PCM in 2 KiB `audio-chunk`s, `audio-stop`. */
function sendAudio(c: Connection, pcm: Buffer): void {
  c.send('audio-start', { ...FORMAT, timestamp: 0 });
  for (let at = 0; at < pcm.length; at += CHUNK_BYTES) {
    c.send('audio-chunk', { ...FORMAT, timestamp: Math.round(at / 32) }, pcm.subarray(at, at + CHUNK_BYTES));
  }
  c.send('audio-stop', { timestamp: Math.round(pcm.length / 32) });
}

/** What a synthesis sent back: the audio's format, its bytes, and how many audio-start…audio-stop runs (sentences). */
export interface Speech {
  format: { rate: number; width: number; channels: number } | undefined;
  pcm: Buffer;
  sentences: number;
}

async function readSpeech(c: Connection, until: string): Promise<Speech> {
  const chunks: Buffer[] = [];
  let format: Speech['format'];
  let sentences = 0;
  for (;;) {
    const event = await c.next();
    if (event === undefined || event.type === until) return { format, pcm: Buffer.concat(chunks), sentences };
    if (event.type === 'audio-start') sentences += 1;
    if (event.type === 'audio-chunk') {
      format = { rate: Number(event.data.rate), width: Number(event.data.width), channels: Number(event.data.channels) };
      if (event.payload) chunks.push(event.payload);
    }
    if (event.type === 'error') throw new Error(`synthesis failed: ${String(event.data.text)}`);
  }
}

/** Home Assistant's Wyoming client for one server. */
export const homeAssistant = (port: number) => ({
  /** `describe` → the server's `info` data. */
  describe: () => request(port, async (c) => {
    c.send('describe');
    const info = await required(c);
    if (info.type !== 'info') throw new Error(`describe answered with ${info.type}`);
    return info.data;
  }),

  /** The conversation agent: `transcript` with HA's context → `handled` / `not-handled` / `error`. */
  handle: (text: string, conversationId: string, language = 'en') => request(port, async (c) => {
    c.send('transcript', { text, language, context: { conversation_id: conversationId } });
    return required(c);
  }),

  /** Text to speech: `synthesize` → audio-start, audio-chunk…, audio-stop. */
  synthesize: (text: string, voice?: { name?: string; speaker?: string }) => request(port, async (c) => {
    c.send('synthesize', { text, ...(voice ? { voice } : {}) });
    return readSpeech(c, 'audio-stop');
  }),

  /**
   * Streamed text to speech, as HA sends it while the answer is written: `synthesize-start`,
   * the text in `synthesize-chunk`s, a `synthesize` with the whole text (for servers that
   * do not stream), `synthesize-stop`; audio per sentence until `synthesize-stopped`.
   */
  synthesizeStreaming: (pieces: string[]) => request(port, async (c) => {
    c.send('synthesize-start', {});
    for (const text of pieces) c.send('synthesize-chunk', { text });
    c.send('synthesize', { text: pieces.join('') });
    c.send('synthesize-stop');
    return readSpeech(c, 'synthesize-stopped');
  }),

  /** Speech to text: `transcribe`, the recording (16 kHz mono 16-bit PCM), → the `transcript` event. */
  transcribe: (pcm: Buffer, language = 'en') => request(port, async (c) => {
    c.send('transcribe', { language });
    sendAudio(c, pcm);
    return required(c);
  }),

  /** Wake word: `detect`, the recording, → `detection` or `not-detected`. */
  detect: (pcm: Buffer, names?: string[]) => request(port, async (c) => {
    c.send('detect', names ? { names } : {});
    sendAudio(c, pcm);
    return required(c);
  }),
});
