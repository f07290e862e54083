/**
 * IRIS as Wyoming services for Home Assistant (notes/wyoming.md §5): HA opens one connection
 * per request and IRIS answers as
 * - `handle`: a `transcript` goes to the conversation engine (local path, tools,
 *   confirmations, memory per HA `conversation_id`) and comes back as `handled`;
 * - `asr`: `transcribe` + audio → `transcript`, from the configured speech to text, gated by
 *   `[stt] min_confidence` (an unsure transcript is empty, so HA asks again);
 * - `tts`: `synthesize` → audio, and the streaming `synthesize-start/-chunk/-stop` form
 *   sentence by sentence;
 * - `wake`: `detect` + audio → `detection` or `not-detected`, with the wake-word model.
 * Peers are untrusted: bounded events, a connection cap, an idle timeout, a peer that stops
 * reading is dropped; a bad connection is logged in one line and closed, nothing else is
 * disturbed.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { messageOf } from '../errors.js';
import type { Logger } from '../log.js';
import { concatSamples, FRAME_SAMPLES, SPEECH_FORMAT } from '../pipeline/audio.js';
import type { SpeechToText } from '../pipeline/stt.js';
import type { TextToSpeech } from '../pipeline/tts.js';
import { decodeWav, encodeWav } from '../pipeline/wav.js';
import type { WakeWordDetector } from '../pipeline/wakeword.js';
import { SentenceStream } from '../conversation/speech.js';
import { encodeEvent, EventReader, wavEvents, WyomingError, type WyomingEvent } from './events.js';

export interface WyomingServices {
  /** What `describe` answers (the `info` event's data). */
  info(): Record<string, unknown>;
  /** A Home Assistant turn: the reply to `text` in the conversation HA names. */
  handle(text: string, conversationId: string | undefined, signal: AbortSignal): Promise<string>;
  /** Speech to text, and the confidence a transcript needs. */
  stt(): Promise<{ stt: SpeechToText; minConfidence: number }>;
  tts(): TextToSpeech;
  /** A detector for one `detect` request, reset; `release` when the request is over. */
  wake(): Promise<{ detector: WakeWordDetector; release: () => void }>;
  /** Free what the services started (a whisper-server). */
  stop?(): Promise<void>;
}

export interface WyomingOptions {
  /** Connections served at once; default 32. */
  maxConnections?: number;
  /** Close a connection that sends nothing for this long (ms); default 60 s. */
  idleMs?: number;
  /** A peer with this much unread output has stopped reading and is dropped (bytes); default 8 MiB. */
  maxUnreadBytes?: number;
}

/** Longest audio taken for one transcription (samples at 16 kHz): 30 s. */
const MAX_TRANSCRIBE_SAMPLES = 30 * 16_000;

/** `tcp://host:port` → host and port. */
export function parseListen(uri: string): { host: string; port: number } {
  const match = /^tcp:\/\/(\[[^\]]+\]|[^:/]+):(\d{1,5})$/.exec(uri);
  const port = Number(match?.[2]);
  // Port 0: any free one (tests).
  if (match?.[1] === undefined || !(port >= 0 && port < 65536)) throw new WyomingError('wyoming_listen', `"${uri}" is not tcp://HOST:PORT`);
  return { host: match[1].replace(/^\[|\]$/g, ''), port };
}

/** Serve until the returned close function is called; resolves once listening. */
export async function serveWyoming(listen: string, services: WyomingServices, log: Logger, options: WyomingOptions = {}): Promise<{ port: number; close: () => Promise<void> }> {
  const { host, port } = parseListen(listen);
  const { maxConnections = 32, idleMs = 60_000, maxUnreadBytes = 8 * 1024 * 1024 } = options;
  const stopping = new AbortController();
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    socket.on('error', (error) => log.debug(`wyoming peer ${socket.remoteAddress ?? ''}: ${messageOf(error)}`));
    if (sockets.size >= maxConnections) {
      log.warn(`wyoming: refused ${socket.remoteAddress ?? 'a peer'}: ${maxConnections} connections already`);
      socket.end(encodeEvent('error', { text: `IRIS is serving ${maxConnections} connections already`, code: 'busy' }));
      return;
    }
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    socket.setTimeout(idleMs, () => socket.destroy());
    new Session(socket, services, log, stopping.signal, maxUnreadBytes);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host, port }, () => resolve());
  });
  const bound = (server.address() as { port: number }).port;
  log.info(`wyoming services on tcp://${host}:${bound} (handle, asr, tts, wake)`);
  return {
    port: bound,
    async close() {
      stopping.abort(new Error('IRIS is stopping'));
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of sockets) socket.destroy();
      await closed;
      await services.stop?.();
    },
  };
}

/** One peer's connection: its events handled one at a time, in order. */
class Session {
  readonly #reader = new EventReader();
  #queue: Promise<void> = Promise.resolve();
  /** What the audio that follows is for. */
  #audioFor: { kind: 'transcribe'; chunks: Int16Array[]; samples: number } | { kind: 'detect'; detector: Promise<{ detector: WakeWordDetector; release: () => void }>; heard: string | undefined; atS: number } | undefined;
  /** Set between `synthesize-start` and `synthesize-stop`. */
  #streaming: SentenceStream | undefined;

  constructor(
    private readonly socket: Socket,
    private readonly services: WyomingServices,
    private readonly log: Logger,
    private readonly stopping: AbortSignal,
    private readonly maxUnreadBytes: number,
  ) {
    socket.on('data', (chunk: Buffer) => {
      let events: WyomingEvent[];
      try {
        events = this.#reader.push(chunk);
      } catch (error) {
        this.#fail(error);
        return;
      }
      for (const event of events) this.#queue = this.#queue.then(() => this.#handle(event)).catch((error: unknown) => this.#fail(error));
    });
  }

  async #handle(event: WyomingEvent): Promise<void> {
    if (this.socket.destroyed) return;
    const { data } = event;
    switch (event.type) {
      case 'describe':
        return this.#send('info', this.services.info());
      case 'ping':
        return this.#send('pong', typeof data.text === 'string' ? { text: data.text } : {});
      case 'transcript': {
        if (typeof data.text !== 'string') throw new WyomingError('wyoming_bad_event', '"transcript" without a text');
        const context = isObject(data.context) ? data.context : {};
        const id = typeof context.conversation_id === 'string' ? context.conversation_id : undefined;
        const reply = await this.services.handle(data.text, id, this.stopping);
        return this.#send('handled', { text: reply, context });
      }
      case 'transcribe':
        this.#audioFor = { kind: 'transcribe', chunks: [], samples: 0 };
        return;
      case 'detect': {
        const detector = this.services.wake();
        detector.catch(() => undefined); // awaited with the audio; never an unhandled rejection
        this.#audioFor = { kind: 'detect', detector, heard: undefined, atS: 0 };
        return;
      }
      case 'audio-start':
        return;
      case 'audio-chunk':
        return this.#audio(event);
      case 'audio-stop':
        return this.#audioEnded();
      case 'synthesize':
        if (this.#streaming !== undefined) return; // the compatibility copy of a streamed text
        if (typeof data.text !== 'string') throw new WyomingError('wyoming_bad_event', '"synthesize" without a text');
        return this.#speak(data.text);
      case 'synthesize-start':
        this.#streaming = new SentenceStream();
        return;
      case 'synthesize-chunk':
        if (this.#streaming === undefined || typeof data.text !== 'string') return;
        for (const sentence of this.#streaming.push(data.text)) await this.#speak(sentence);
        return;
      case 'synthesize-stop': {
        const rest = this.#streaming?.flush() ?? [];
        this.#streaming = undefined;
        for (const sentence of rest) await this.#speak(sentence);
        return this.#send('synthesize-stopped');
      }
      default:
        this.log.debug(`wyoming: ignored a "${event.type}" event`);
    }
  }

  async #audio(event: WyomingEvent): Promise<void> {
    const target = this.#audioFor;
    if (target === undefined || event.payload === undefined) return;
    const samples = toSpeech(event);
    if (target.kind === 'transcribe') {
      if (target.samples + samples.length > MAX_TRANSCRIBE_SAMPLES) throw new WyomingError('wyoming_too_long', 'more than 30 s of audio for one transcription');
      target.chunks.push(samples);
      target.samples += samples.length;
      return;
    }
    if (target.heard !== undefined) return;
    const { detector } = await target.detector;
    for (let i = 0; i < samples.length; i += FRAME_SAMPLES) {
      const frame = samples.subarray(i, i + FRAME_SAMPLES);
      const hit = await detector.process({ ...SPEECH_FORMAT, samples: frame, atS: target.atS });
      target.atS += frame.length / SPEECH_FORMAT.rate;
      if (hit !== undefined) {
        target.heard = detector.word;
        return this.#send('detection', { name: detector.word, timestamp: Math.round(target.atS * 1000) });
      }
    }
  }

  async #audioEnded(): Promise<void> {
    const target = this.#audioFor;
    this.#audioFor = undefined;
    if (target?.kind === 'detect') {
      (await target.detector).release();
      if (target.heard === undefined) await this.#send('not-detected');
      return;
    }
    if (target?.kind !== 'transcribe') return;
    const { stt, minConfidence } = await this.services.stt();
    const heard = await stt.transcribe(concatSamples(target.chunks), this.stopping);
    const sure = heard.confidence >= minConfidence;
    if (!sure && heard.text !== '') this.log.info(`wyoming: "${heard.text}" heard at confidence ${heard.confidence}; answered as not understood`);
    await this.#send('transcript', { text: sure ? heard.text : '' });
  }

  /** One sentence as `audio-start`, 2 KiB `audio-chunk`s and `audio-stop`, in the voice's own format. */
  async #speak(text: string): Promise<void> {
    if (text.trim() === '') return;
    const wav = await this.services.tts().synthesize(text, this.stopping);
    for (const { type, data, payload } of wavEvents(wav).events) await this.#send(type, data, payload);
  }

  #send(type: string, data: Record<string, unknown> = {}, payload?: Buffer): Promise<void> {
    if (this.socket.destroyed) return Promise.resolve();
    if (this.socket.writableLength > this.maxUnreadBytes) {
      this.log.warn(`wyoming: ${this.socket.remoteAddress ?? 'a peer'} stopped reading; dropped`);
      this.socket.destroy();
      return Promise.resolve();
    }
    this.socket.write(encodeEvent(type, data, payload));
    return Promise.resolve();
  }

  #fail(error: unknown): void {
    if (this.socket.destroyed) return;
    this.log.warn(`wyoming: ${this.socket.remoteAddress ?? 'a peer'}: ${messageOf(error)}; connection closed`);
    this.socket.end(encodeEvent('error', { text: messageOf(error), code: error instanceof WyomingError ? error.code : 'failed' }));
    this.socket.destroySoon();
  }
}

/** An audio chunk's PCM as 16 kHz mono 16-bit (resampled and mixed down when it is not). */
export function toSpeech(event: WyomingEvent): Int16Array {
  const { rate = 16_000, width = 2, channels = 1 } = event.data as { rate?: number; width?: number; channels?: number };
  if (width !== 2) throw new WyomingError('wyoming_audio', `audio of width ${String(width)}: IRIS takes 16-bit samples`);
  const payload = event.payload ?? Buffer.alloc(0);
  const samples = new Int16Array(payload.buffer.slice(payload.byteOffset, payload.byteOffset + payload.length - (payload.length % 2)));
  if (rate === SPEECH_FORMAT.rate && channels === 1) return samples;
  if (!(Number.isInteger(rate) && rate >= 8000 && rate <= 192_000 && Number.isInteger(channels) && channels >= 1 && channels <= 8)) {
    throw new WyomingError('wyoming_audio', `audio at ${String(rate)} Hz with ${String(channels)} channels: not a format IRIS reads`);
  }
  return decodeWav(encodeWav(samples, { rate, width, channels }), 'an audio chunk');
}

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);
