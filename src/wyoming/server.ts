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
 * Peers are untrusted (issue 25): bounded events; per connection, the events read and waiting
 * bounded (past that the socket is not read until they drain), a deadline for each whole
 * event, audio taken no faster than its pace (pace.ts), streamed text taken as it is said; a
 * connection cap where a newcomer replaces the quietest connection not working on a request;
 * an idle timeout; a peer that stops reading is dropped. A bad connection is logged in one line
 * and closed, nothing else is disturbed.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { setImmediate as yieldToIo, setTimeout as sleep } from 'node:timers/promises';
import { messageOf } from '../errors.js';
import type { Logger } from '../log.js';
import { isObject } from '../object.js';
import { concatSamples, durationS, SPEECH_FORMAT, type AudioSink } from '../pipeline/audio.js';
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
import { AUDIO_BURST_S, AUDIO_PACE, AudioPace } from './pace.js';

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
  /** Connections served at once; default 32. A newcomer past it replaces the connection that has sent no whole event the longest (at least `replaceQuietMs`) and is not working on a request; when there is none, it gets `busy`. */
  maxConnections?: number;
  /** A connection is replaced by a newcomer only after this long without a whole event, unless it is midway through one (ms); default 2 s. */
  replaceQuietMs?: number;
  /** Close a connection that sends nothing for this long (ms); default 60 s. */
  idleMs?: number;
  /** A peer with this much unread output has stopped reading and is dropped (bytes); default 8 MiB. */
  maxUnreadBytes?: number;
  /** Events read and not yet handled, in bytes, past which the connection is not read until they are (bytes); default 1 MiB. */
  maxWaitingBytes?: number;
  /** The same in events; default 256. */
  maxWaitingEvents?: number;
  /** A whole event (header, data and payload) must arrive within this long of its first byte (ms); default 10 s. */
  eventMs?: number;
  /** Audio taken at once ahead of its pace (s of audio; it then comes at 1.5 × real time); default 10 s. */
  audioBurstS?: number;
}

/**
 * Defaults, each with its reason. Home Assistant sends an event in one write (audio in 2 KiB
 * chunks, 64 ms of speech) and waits for each answer, so nothing of its ever waits long:
 * - 1 MiB or 256 events waiting: 30 s of 16 kHz audio, or 16 s in Home Assistant's chunks,
 *   behind a request still being worked on; more is a peer not waiting for answers (150 chunks
 *   of 4 MiB behind a slow `transcript` took RSS from 222 to 854 MiB).
 * - 10 s for a whole event: its events are a few KiB, and even the largest allowed (5 MiB)
 *   arrives in 10 s at 4 Mbit/s; one byte every 20 s of a header held a connection forever.
 * - 2 s quiet before a connection is replaced (at once when it is midway through an event):
 *   Home Assistant sends its request whole as soon as it has connected, so a burst of
 *   newcomers cannot push out requests just begun, and trickling peers that all reconnect at
 *   once still make room.
 */
const DEFAULTS = { maxConnections: 32, replaceQuietMs: 2_000, idleMs: 60_000, maxUnreadBytes: 8 * 1024 * 1024, maxWaitingBytes: 1024 * 1024, maxWaitingEvents: 256, eventMs: 10_000, audioBurstS: AUDIO_BURST_S };
type Limits = typeof DEFAULTS;

/** A connection ended with an `error` event is destroyed this long after at the latest (ms): the event is a few hundred bytes, written at once unless the peer stopped reading. */
const END_GRACE_MS = 2_000;
/** Unspoken text of a streamed synthesis (characters) past which the next chunk waits: two of espeak-ng's longest sentences; text from a model comes slower than it is said, so only a peer pushing faster than speech ever waits. */
const MAX_UNSPOKEN_CHARS = 8_000;
/** A streamed text without a sentence end is cut into a sentence at this length (characters): espeak-ng says 4,000 at most in one go. */
const MAX_SENTENCE_CHARS = 4_000;

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
  const limits: Limits = { ...DEFAULTS, ...options };
  const { maxConnections, replaceQuietMs } = limits;
  const stopping = new AbortController();
  const sessions = new Map<Socket, Session>();
  /**
   * Room for a newcomer at the cap: the connection that has sent no whole event the longest
   * and is not working on a request is closed. Trickling peers (one header byte every 20 s)
   * held every place and Home Assistant's `describe` got `busy`; Home Assistant opens one
   * connection per request, so the newcomer is the one with something to ask.
   */
  const makeRoom = (): boolean => {
    const nowMs = performance.now();
    let quietest: Session | undefined;
    for (const session of sessions.values()) {
      const replaceable = !session.working && (session.midEvent || nowMs - session.lastEventMs >= replaceQuietMs);
      if (replaceable && (quietest === undefined || session.lastEventMs < quietest.lastEventMs)) quietest = session;
    }
    if (quietest === undefined) return false;
    sessions.delete(quietest.socket);
    quietest.evict(`${maxConnections} connections and a new one`);
    return true;
  };
  const server: Server = createServer((socket) => {
    socket.on('error', (error) => log.debug(`wyoming peer ${socket.remoteAddress ?? ''}: ${messageOf(error)}`));
    if (sessions.size >= maxConnections && !makeRoom()) {
      log.warn(`wyoming: refused ${socket.remoteAddress ?? 'a peer'}: ${maxConnections} connections already, each working on a request or heard from in the last ${replaceQuietMs / 1000} s`);
      socket.end(encodeEvent('error', { text: `IRIS is serving ${maxConnections} connections already`, code: 'busy' }));
      socket.destroySoon();
      setTimeout(() => socket.destroy(), END_GRACE_MS).unref(); // a refused peer that never closes its side does not keep a socket
      return;
    }
    sessions.set(socket, new Session(socket, services, log, stopping.signal, limits));
    socket.once('close', () => sessions.delete(socket));
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
      for (const socket of sessions.keys()) socket.destroy();
      await closed;
      await services.stop?.();
    },
  };
}

/**
 * One peer's connection: its events handled one at a time, in order; each request a run of the
 * pipeline. Events read wait in `#waiting`; past the limits the socket is paused (the peer's
 * writes then wait in its kernel buffers) and resumed once they drain.
 */
class Session {
  #reader = new EventReader();
  /** Events read and not yet handled, with their size (bytes) as counted against the limit. */
  #waiting: { event: WyomingEvent; bytes: number }[] = [];
  #waitingBytes = 0;
  /** The size of the event being handled (bytes): it is still held. */
  #handlingBytes = 0;
  #handling = false;
  /** Failed or replaced: nothing more is read or handled. */
  #over = false;
  /** Not read because too much waits: the idle timeout and the event deadline stop meanwhile. */
  #paused = false;
  /** Ends the connection when an event begun is not whole in time. */
  #deadline: NodeJS.Timeout | undefined;
  readonly #pace: AudioPace;
  /** Ends the connection's runs when it closes or IRIS stops. */
  readonly #closed = new AbortController();
  /** When the last whole event arrived, or the connection opened (performance.now() ms). */
  lastEventMs = performance.now();
  /** A request is being worked on (a transcript answered, a text said): not a connection to replace. */
  working = false;
  /** What the audio that follows is for: a transcription's samples, or a wake-word run reading it (stopped when another request replaces it). */
  #audioFor: { kind: 'transcribe'; chunks: Int16Array[]; samples: number } | { kind: 'detect'; audio: PushedAudio; run: Promise<RunResult<never>>; stop: AbortController } | undefined;
  /** Between `synthesize-start` and `synthesize-stop`: the text so far, and the run speaking it. */
  #streaming: { text: SentenceStream; sentences: Unspoken; run: Promise<unknown> } | undefined;

  constructor(
    readonly socket: Socket,
    private readonly services: WyomingServices,
    private readonly log: Logger,
    stopping: AbortSignal,
    private readonly limits: Limits,
  ) {
    this.#pace = new AudioPace(AUDIO_PACE, limits.audioBurstS);
    socket.setTimeout(limits.idleMs, () => socket.destroy());
    // IRIS stopping destroys every socket, so the close ends the runs then too.
    const close = () => {
      this.#closed.abort(new Error('the connection closed'));
      this.#streaming?.sentences.close();
      this.#drop();
    };
    socket.once('close', close);
    if (stopping.aborted) close();
    socket.on('data', (chunk: Buffer) => {
      if (this.#over) return;
      let events: WyomingEvent[];
      try {
        events = this.#reader.push(chunk);
      } catch (error) {
        this.#fail(error);
        return;
      }
      if (events.length > 0) {
        this.lastEventMs = performance.now();
        this.#clearDeadline(); // the event it ran for is whole
      }
      for (const event of events) {
        const bytes = (event.payload?.length ?? 0) + JSON.stringify(event.data).length;
        this.#waiting.push({ event, bytes });
        this.#waitingBytes += bytes;
      }
      this.#flow();
      void this.#handleWaiting();
    });
  }

  /** Part of an event has come and the rest has not. */
  get midEvent(): boolean {
    return this.#reader.partial;
  }

  /** The connection closed for a newcomer (the server's cap). */
  evict(why: string): void {
    const quietS = Math.round((performance.now() - this.lastEventMs) / 1000);
    this.log.warn(`wyoming: closed ${this.socket.remoteAddress ?? 'a peer'} (no whole event for ${quietS} s) for a newcomer: ${why}`);
    this.#end(new WyomingError('busy', `IRIS is serving ${this.limits.maxConnections} connections already; this quiet one was closed for a new one`));
  }

  /** Pause reading while too much waits, resume once it has drained; the event deadline runs only while reading. */
  #flow(): void {
    if (this.#over) return; // ended: its socket is going, never read again
    // While events wait or one is handled, an event still arriving counts too (it waits next);
    // otherwise it must be able to arrive whole, up to the largest allowed.
    const busy = this.#handling || this.#waiting.length > 0;
    const bytes = this.#waitingBytes + this.#handlingBytes + (busy ? this.#reader.bufferedBytes : 0);
    const over = (busy && bytes > this.limits.maxWaitingBytes) || this.#waiting.length >= this.limits.maxWaitingEvents;
    if (over && !this.#paused && !this.socket.destroyed) {
      this.#paused = true;
      this.socket.pause();
      this.socket.setTimeout(0); // the peer is waiting for IRIS, not idle
      this.#clearDeadline();
      this.log.debug(`wyoming: ${this.socket.remoteAddress ?? 'a peer'}: ${this.#waiting.length} events and ${bytes} bytes waiting; not reading until they are handled`);
    } else if (!over && this.#paused && !this.socket.destroyed) {
      this.#paused = false;
      this.socket.setTimeout(this.limits.idleMs);
      this.socket.resume();
    }
    if (!this.#paused && this.#deadline === undefined && this.#reader.partial) {
      const { eventMs } = this.limits;
      this.#deadline = setTimeout(() => this.#fail(new WyomingError('wyoming_slow_event', `an event still not whole ${eventMs / 1000} s after its first byte`)), eventMs);
      this.#deadline.unref();
    }
  }

  #clearDeadline(): void {
    clearTimeout(this.#deadline);
    this.#deadline = undefined;
  }

  /** The waiting events handled in order, one at a time; a failure ends the connection. */
  async #handleWaiting(): Promise<void> {
    if (this.#handling) return;
    this.#handling = true;
    try {
      for (let next = this.#waiting.shift(); next !== undefined; next = this.#waiting.shift()) {
        this.#waitingBytes -= next.bytes;
        this.#handlingBytes = next.bytes;
        try {
          this.working = next.event.type !== 'audio-chunk';
          await this.#handle(next.event);
        } catch (error) {
          this.#fail(error);
        } finally {
          this.working = false;
          this.#handlingBytes = 0;
          this.#flow();
        }
      }
    } finally {
      this.#handling = false;
      this.#flow(); // an event still arriving may now arrive whole
    }
  }

  /** What waits is let go (the connection is over): its memory comes back at once, not when a run it waits behind ends. */
  #drop(): void {
    this.#clearDeadline();
    this.#waiting = [];
    this.#waitingBytes = 0;
    this.#reader = new EventReader();
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
        const sentences = new Unspoken();
        const run = runPipeline({ text: sentences }, { start: 'tts', end: 'tts', tts: this.services.tts(), sink: this.#sink, signal: this.#signal });
        run.catch(() => undefined).finally(() => sentences.close()); // awaited at synthesize-stop; a run that ended takes no more
        this.#streaming = { text: new SentenceStream(), sentences, run };
        return;
      }
      case 'synthesize-chunk': {
        const streaming = this.#streaming;
        if (streaming === undefined || typeof data.text !== 'string') return;
        // A piece at a time, each waiting until the voice is near: a 1 MiB chunk of "A. " is
        // never 350,000 sentences at once.
        for (let at = 0; at < data.text.length; at += MAX_SENTENCE_CHARS) {
          streaming.sentences.push(streaming.text.push(data.text.slice(at, at + MAX_SENTENCE_CHARS)));
          if (streaming.text.length > MAX_SENTENCE_CHARS) streaming.sentences.push(streaming.text.flush()); // no sentence end in sight
          await streaming.sentences.room(MAX_UNSPOKEN_CHARS);
          // Between the pieces of a long chunk: with a voice that answers at once, the loop would
          // otherwise never let a close be seen (one piece, as Home Assistant's chunks are, needs no turn).
          if (at + MAX_SENTENCE_CHARS < data.text.length) await yieldToIo();
          if (streaming.sentences.closed) return; // the run or the connection ended: the rest is never said
        }
        return;
      }
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
    streaming.sentences.push(streaming.text.flush());
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

  async #audio(event: WyomingEvent): Promise<void> {
    const target = this.#audioFor;
    if (target === undefined || event.payload === undefined) return;
    const samples = toSpeech(event);
    // Too long is refused before any wait for pace (a 4 MiB chunk at 8 kHz would wait minutes first).
    if (target.kind === 'transcribe' && target.samples + samples.length > MAX_TRANSCRIBE_SAMPLES) throw new WyomingError('wyoming_too_long', 'more than 30 s of audio for one transcription');
    // Taken no faster than its pace: the events behind it wait, and past the limits the socket is not read.
    const waitMs = this.#pace.take(durationS(samples.length));
    if (waitMs > 0) await sleep(waitMs, undefined, { signal: this.#signal });
    if (target.kind === 'detect') return target.audio.push(samples);
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
    if (this.socket.writableLength > this.limits.maxUnreadBytes) {
      this.log.warn(`wyoming: ${this.socket.remoteAddress ?? 'a peer'} stopped reading; dropped`);
      this.socket.destroy();
      return Promise.resolve();
    }
    this.socket.write(encodeEvent(type, data, payload));
    return Promise.resolve();
  }

  #fail(error: unknown): void {
    if (this.socket.destroyed || this.#over) return;
    this.log.warn(`wyoming: ${this.socket.remoteAddress ?? 'a peer'}: ${messageOf(error)}; connection closed`);
    this.#end(error);
  }

  /** The peer told why in an `error` event, and the connection closed once it is written; nothing more is read or handled. */
  #end(error: unknown): void {
    if (this.socket.destroyed || this.#over) return;
    this.#over = true;
    this.#drop();
    this.socket.end(encodeEvent('error', { text: messageOf(error), code: error instanceof WyomingError ? error.code : 'failed' }));
    this.socket.destroySoon();
    setTimeout(() => this.socket.destroy(), END_GRACE_MS).unref(); // a peer not reading does not keep it
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

/**
 * The sentences of a streamed synthesis not yet taken by its run, counted in characters, so
 * the peer's next chunk can wait while too many wait (`room`).
 */
class Unspoken implements AsyncIterable<string> {
  readonly #sentences = new Channel<string>();
  #chars = 0;
  #closed = false;
  #waiters: (() => void)[] = [];

  /** Nothing more will be taken. */
  get closed(): boolean {
    return this.#closed;
  }

  push(sentences: string[]): void {
    if (this.#closed) return;
    for (const sentence of sentences) {
      this.#sentences.push(sentence);
      this.#chars += sentence.length;
    }
  }

  close(): void {
    this.#closed = true;
    this.#sentences.close();
    this.#wake();
  }

  /** Resolves once at most `maxChars` wait, or nothing more will be taken. */
  async room(maxChars: number): Promise<void> {
    while (this.#chars > maxChars && !this.#closed) await new Promise<void>((resolve) => this.#waiters.push(resolve));
  }

  async *[Symbol.asyncIterator](): AsyncIterator<string> {
    for await (const sentence of this.#sentences) {
      this.#chars -= sentence.length;
      this.#wake();
      yield sentence;
    }
  }

  #wake(): void {
    for (const resolve of this.#waiters.splice(0)) resolve();
  }
}
