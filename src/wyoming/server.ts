/**
 * IRIS as Wyoming services for Home Assistant (notes/wyoming.md §5): HA opens one connection
 * per request, and each request is a run of the pipeline (pipeline/pipeline.ts) over it:
 * - `handle` (conversation→conversation): a `transcript` goes to the conversation engine (local
 *   path, tools, confirmations, memory per HA `conversation_id`) and comes back as `handled`;
 * - `asr` (stt→stt): `transcribe` + audio → `transcript`, gated by `[stt] min_confidence` (an
 *   unsure transcript is empty, so HA asks again);
 * - `tts` (tts→tts): `synthesize` → audio, and the streaming `synthesize-start/-chunk/-stop`
 *   form sentence by sentence as the text comes;
 * - `wake` (wake→wake): `detect` + audio → `detection` (as soon as it is heard) or
 *   `not-detected`.
 * Peers are untrusted: bounded events, a connection cap, an idle timeout, a peer that stops
 * reading is dropped; a bad connection is logged in one line and closed, nothing else is
 * disturbed.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { messageOf } from '../errors.js';
import type { Logger } from '../log.js';
import { concatSamples, SPEECH_FORMAT, type AudioSink } from '../pipeline/audio.js';
import { PushedAudio } from '../pipeline/capture.js';
import { runPipeline, type Responder, type RunResult } from '../pipeline/pipeline.js';
import type { SpeechToText } from '../pipeline/stt.js';
import type { TextToSpeech } from '../pipeline/tts.js';
import { decodeWav, encodeWav } from '../pipeline/wav.js';
import type { WakeWordDetector } from '../pipeline/wakeword.js';
import { Channel } from '../conversation/channel.js';
import { SentenceStream } from '../conversation/speech.js';
import type { TurnResult } from '../conversation/types.js';
import { encodeEvent, EventReader, wavEvents, WyomingError, type WyomingEvent } from './events.js';

export interface WyomingServices {
  /** What `describe` answers (the `info` event's data). */
  info(): Record<string, unknown>;
  /** The conversation Home Assistant names (its `conversation_id`; none: a new one). */
  conversation(conversationId: string | undefined): Responder<TurnResult>;
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

/** One peer's connection: its events handled one at a time, in order; each request a run of the pipeline. */
class Session {
  readonly #reader = new EventReader();
  #queue: Promise<void> = Promise.resolve();
  /** Ends the connection's runs when it closes or IRIS stops. */
  readonly #closed = new AbortController();
  /** What the audio that follows is for: a transcription's samples, or a wake-word run reading it (stopped when another request replaces it). */
  #audioFor: { kind: 'transcribe'; chunks: Int16Array[]; samples: number } | { kind: 'detect'; audio: PushedAudio; run: Promise<RunResult<never>>; stop: AbortController } | undefined;
  /** Between `synthesize-start` and `synthesize-stop`: the text so far, and the run speaking it. */
  #streaming: { text: SentenceStream; sentences: Channel<string>; run: Promise<unknown> } | undefined;

  constructor(
    private readonly socket: Socket,
    private readonly services: WyomingServices,
    private readonly log: Logger,
    stopping: AbortSignal,
    private readonly maxUnreadBytes: number,
  ) {
    // IRIS stopping destroys every socket, so the close ends the runs then too.
    const close = () => {
      this.#closed.abort(new Error('the connection closed'));
      this.#streaming?.sentences.close();
    };
    socket.once('close', close);
    if (stopping.aborted) close();
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

  get #signal(): AbortSignal {
    return this.#closed.signal;
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
        // Home Assistant's transcripts were heard (by its speech to text, or typed in its Assist
        // box: IRIS cannot tell), so a tool that asks first asks here too.
        const done = await runPipeline({ text: data.text }, { start: 'conversation', end: 'conversation', respond: this.services.conversation(id), heard: { heard: true }, signal: this.#signal });
        return this.#send('handled', { text: done.result?.reply ?? done.reply ?? '', context });
      }
      case 'transcribe':
        this.#endDetect();
        this.#audioFor = { kind: 'transcribe', chunks: [], samples: 0 };
        return;
      case 'detect':
        return this.#detect();
      case 'audio-start':
        return;
      case 'audio-chunk':
        return this.#audio(event);
      case 'audio-stop':
        return this.#audioEnded();
      case 'synthesize':
        if (this.#streaming !== undefined) return; // the compatibility copy of a streamed text
        if (typeof data.text !== 'string') throw new WyomingError('wyoming_bad_event', '"synthesize" without a text');
        await runPipeline({ text: data.text }, { start: 'tts', end: 'tts', tts: this.services.tts(), sink: this.#sink, signal: this.#signal });
        return;
      case 'synthesize-start': {
        await this.#endStreaming(); // one begun before and never stopped is said first, in order
        // One run speaks the text sentence by sentence as the chunks bring it.
        const sentences = new Channel<string>();
        const run = runPipeline({ text: sentences }, { start: 'tts', end: 'tts', tts: this.services.tts(), sink: this.#sink, signal: this.#signal });
        run.catch(() => undefined); // awaited at synthesize-stop
        this.#streaming = { text: new SentenceStream(), sentences, run };
        return;
      }
      case 'synthesize-chunk':
        if (this.#streaming === undefined || typeof data.text !== 'string') return;
        for (const sentence of this.#streaming.text.push(data.text)) this.#streaming.sentences.push(sentence);
        return;
      case 'synthesize-stop':
        await this.#endStreaming();
        return this.#send('synthesize-stopped');
      default:
        this.log.debug(`wyoming: ignored a "${event.type}" event`);
    }
  }

  /** The streamed text's last sentences said, and its run ended. */
  async #endStreaming(): Promise<void> {
    const streaming = this.#streaming;
    this.#streaming = undefined;
    if (streaming === undefined) return;
    for (const sentence of streaming.text.flush()) streaming.sentences.push(sentence);
    streaming.sentences.close();
    await streaming.run;
  }

  /** A wake-word run over the audio that follows: `detection` the moment it is heard, `not-detected` at the audio's end. */
  #detect(): void {
    this.#endDetect();
    const audio = new PushedAudio();
    const stop = new AbortController();
    const closed = () => stop.abort(this.#signal.reason);
    this.#signal.addEventListener('abort', closed, { once: true });
    const detector = this.services.wake();
    detector.catch(() => undefined); // awaited by the run; never an unhandled rejection
    const run = (async () => {
      const { detector: wake, release } = await detector;
      try {
        return await runPipeline<never>({ audio }, { start: 'wake', end: 'wake', wake, signal: stop.signal });
      } finally {
        release();
        this.#signal.removeEventListener('abort', closed);
      }
    })();
    run.then(({ wake }) => {
      if (wake !== undefined && !stop.signal.aborted) void this.#send('detection', { name: wake.word, timestamp: Math.round(wake.atS * 1000) });
    }, () => undefined);
    this.#audioFor = { kind: 'detect', audio, run, stop };
  }

  /** A wake-word run still reading when another request starts is stopped: it says nothing more, and its detector is freed. */
  #endDetect(): void {
    if (this.#audioFor?.kind === 'detect') this.#audioFor.stop.abort(new Error('replaced by another request'));
  }

  #audio(event: WyomingEvent): void {
    const target = this.#audioFor;
    if (target === undefined || event.payload === undefined) return;
    const samples = toSpeech(event);
    if (target.kind === 'detect') return target.audio.push(samples);
    if (target.samples + samples.length > MAX_TRANSCRIBE_SAMPLES) throw new WyomingError('wyoming_too_long', 'more than 30 s of audio for one transcription');
    target.chunks.push(samples);
    target.samples += samples.length;
  }

  async #audioEnded(): Promise<void> {
    const target = this.#audioFor;
    this.#audioFor = undefined;
    if (target?.kind === 'detect') {
      target.audio.end();
      if ((await target.run).wake === undefined) await this.#send('not-detected');
      return;
    }
    if (target?.kind !== 'transcribe') return;
    const { stt, minConfidence } = await this.services.stt();
    const heard = await runPipeline<never>({ samples: concatSamples(target.chunks) }, { start: 'stt', end: 'stt', stt, minConfidence, signal: this.#signal });
    const { transcript = '', confidence = 0 } = heard;
    if (heard.outcome === 'not_understood' && transcript !== '') this.log.info(`wyoming: "${transcript}" heard at confidence ${confidence}; answered as not understood`);
    await this.#send('transcript', { text: heard.outcome === 'answered' ? transcript : '' });
  }

  /** Speech out: each sentence as `audio-start`, 2 KiB `audio-chunk`s and `audio-stop`, in the voice's own format. */
  readonly #sink: AudioSink = {
    play: async (wav) => {
      for (const { type, data, payload } of wavEvents(wav).events) await this.#send(type, data, payload);
    },
  };

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
