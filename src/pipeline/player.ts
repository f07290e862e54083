/**
 * The speaker as one stream kept open: a long-lived `aplay` (argument vector) fed raw S16_LE
 * mono PCM at 22,050 Hz in real time, silence between clips, by a thread of its own
 * (player-feed.mjs). Every clip then shares one timeline: the echo of any clip reaches the
 * microphone after the same delay, so the echo canceller's filter, trained on one clip, still
 * lines up on the next (one aplay per clip moved the delay 0-18 ms from clip to clip: its own
 * start). 22,050 Hz is espeak-ng's and Piper's rate: what IRIS says is written as it is, other
 * clips are resampled; ALSA's plug layer converts to the card's rate once, as before.
 *
 * The stream opens on the first clip and closes after `idleS` with nothing to play (the device
 * is not held, nor silence written, all day). Stopping a clip drops what is not written yet;
 * what is already queued (the lead plus ALSA's small buffer, `--buffer-time`) still sounds. A
 * player that fails or exits rejects the clips it had with an AudioError; the next clip opens a
 * new one.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker, type TransferListItem } from 'node:worker_threads';
import type { Logger } from '../log.js';
import type { PlacedClip, StreamSink } from './audio.js';
import { AudioError, alsaToolMissing } from './capture.js';
import { monoSamples, resampleClip } from './resample.js';

/** The stream's rate: espeak-ng's and Piper's voices, so speech is written unconverted. */
export const STREAM_RATE = 22_050;
/** Clock samples a second (EchoReference.nowSamples). */
const CLOCK_RATE = 16_000;
const nowClock = (): number => Math.round((performance.now() * CLOCK_RATE) / 1000);
/**
 * ALSA's buffer and period asked of aplay (µs). The buffer is what still sounds after a stop and
 * how long a clip waits to start (a card starts once its buffer is full), and the feeder's margin
 * against a late write (an underrun moves the timeline, as one aplay per clip did). 20 ms: on
 * the test room (test/helpers/alsa-room.ts, load 5-7) stop → silence 28 ms, start 44 ms (p50),
 * no clip off its place by more than 0.1 ms; 40 ms: 50 and 70 ms. aplay reports what the device
 * granted (logged at debug).
 */
const BUFFER_US = 20_000;
const PERIOD_US = 5_000;
/** How far ahead of its timeline the feeder writes (frames, 10 ms), and how often (ms). */
const LEAD_FRAMES = Math.round(STREAM_RATE * 0.01);
const TICK_MS = 5;
/** A clip starts this far after the feeder's next write (frames, 5 ms): the message reaches the feeder before it writes there. */
const GUARD_FRAMES = Math.round(STREAM_RATE * 0.005);
/** How long a closing player may take to play what it has and exit (ms): ALSA's buffer is 20 ms; a hung device gets killed. */
const CLOSE_MS = 2_000;
/** Frames written before aplay sets the device up: it reads a header's worth (26 bytes) first. */
const PRIME_FRAMES = 32;

export interface PlayerStreamOptions {
  /** ALSA playback device. */
  device: string;
  /** The program; default aplay on PATH. */
  command?: string;
  /** Close the stream after this long with nothing to play (seconds). */
  idleS: number;
  /** Where the stream's opening (debug) and underruns (warn) are logged. */
  log?: Pick<Logger, 'debug' | 'warn'>;
}

/** The feeder's file: beside this module in the source tree, beside the bundle (dist/) or one up from its chunks. */
function feederFile(): string {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const candidates = [path.join(here, 'player-feed.mjs'), path.join(here, '..', 'player-feed.mjs')];
  return candidates.find((file) => existsSync(file)) ?? candidates[0]!;
}

/** aplay's arguments for the stream. */
export function aplayStreamArgs(device: string): string[] {
  return ['-v', '-t', 'raw', '-f', 'S16_LE', '-r', String(STREAM_RATE), '-c', '1', '-D', device, `--buffer-time=${BUFFER_US}`, `--period-time=${PERIOD_US}`, '-'];
}

type FeederMessage =
  | { type: 'spawned'; pid: number }
  | { type: 'ready'; anchor: number; bufferFrames: number; periodFrames: number }
  | { type: 'ended' | 'dropped'; id: number; end: number }
  | { type: 'held' | 'released'; frame: number }
  | { type: 'underrun'; text: string }
  | { type: 'error'; code?: string; message: string }
  | { type: 'exit'; code: number | null; signal: string | null; stderr: string };

interface Clip {
  resolveEnd: (frame: number) => void;
  reject: (error: Error) => void;
  signal: AbortSignal;
}

/** One aplay's life: its feeder thread, its timeline and the clips queued on it. */
class OpenStream {
  /** The timeline's frame 0, in this thread's performance.now() ms; undefined until aplay is ready. */
  #anchorMs: number | undefined;
  #worker: Worker | undefined;
  /** Messages for the feeder before it exists. */
  #queued: [unknown, TransferListItem[]][] = [];
  readonly #clips = new Map<number, Clip>();
  #nextId = 0;
  /** Holds and releases asked of the feeder, answered in order: each resolves with the frame it took effect at. */
  readonly #holds: ((frame: number) => void)[] = [];
  readonly #ready: Promise<void>;
  #settleReady: [() => void, (error: Error) => void] = [() => undefined, () => undefined];
  #failure: Error | undefined;
  #closing = false;
  /** The feeder thread (and its aplay) has ended. */
  readonly exited: Promise<void>;
  pid: number | undefined;

  /** `after`: the previous stream's end (a device without mixing takes one player at a time). */
  constructor(readonly options: PlayerStreamOptions, after: Promise<void>, readonly onGone: (stream: OpenStream) => void) {
    this.#ready = new Promise<void>((resolve, reject) => (this.#settleReady = [resolve, reject]));
    this.#ready.catch(() => undefined);
    this.exited = after.then(() => new Promise<void>((done) => {
      if (this.#closing && this.#clips.size === 0) return done(); // closed before it ever started
      const worker = new Worker(feederFile(), {
        execArgv: [], // plain JavaScript: no loader of the parent's (tsx) to start first
        workerData: { command: options.command ?? 'aplay', args: aplayStreamArgs(options.device), rate: STREAM_RATE, leadFrames: LEAD_FRAMES, tickMs: TICK_MS, primeFrames: PRIME_FRAMES },
      });
      this.#worker = worker;
      worker.on('message', (message: FeederMessage) => this.#on(message));
      worker.once('error', (error) => this.#fail(new AudioError('audio_output', `speaker "${options.device}": ${error.message}`, { cause: error })));
      worker.once('exit', () => {
        this.#fail(new AudioError('audio_output', `speaker "${options.device}": the player ended`));
        done();
      });
      for (const [message, transfer] of this.#queued) worker.postMessage(message, transfer);
      this.#queued = [];
    }));
  }

  /** Where `frame` sounds on the live clock (16 kHz samples, not rounded: a frame of the stream falls between two). */
  placeOf(frame: number): number {
    return (((this.#anchorMs ?? 0) + (frame * 1000) / STREAM_RATE) * CLOCK_RATE) / 1000;
  }

  /** Where `frame` sounds on the live clock, to the nearest sample. */
  clockOf(frame: number): number {
    return Math.round(this.placeOf(frame));
  }

  get busy(): boolean {
    return this.#clips.size > 0;
  }

  add(pcm: Int16Array, signal: AbortSignal): PlacedClip {
    const id = this.#nextId++;
    // The first frame the feeder has not written yet, plus a guard; before aplay is ready, just after its lead.
    const next = this.#anchorMs === undefined ? PRIME_FRAMES + LEAD_FRAMES : Math.floor(((performance.now() - this.#anchorMs) * STREAM_RATE) / 1000) + LEAD_FRAMES;
    const from = next + GUARD_FRAMES;
    const ended = new Promise<number>((resolveEnd, reject) => {
      if (this.#failure) return reject(this.#failure);
      this.#clips.set(id, { resolveEnd, reject, signal });
      this.#post({ type: 'clip', id, at: from, pcm }, [pcm.buffer as ArrayBuffer]);
    });
    const onAbort = (): void => this.#post({ type: 'drop', id });
    signal.addEventListener('abort', onAbort, { once: true });
    if (signal.aborted) onAbort();
    const at = this.#ready.then(() => this.placeOf(from));
    at.catch(() => undefined);
    // A clip whose stream died has no place on its timeline: it ended now.
    const done = ended.finally(() => signal.removeEventListener('abort', onAbort)).then(async (end) => (end < 0 ? nowClock() : (await at, this.clockOf(end))));
    return { at, done };
  }

  /** Silence from the next frame written, the clips going on under it (`held`), or the clips heard again: where on the clock (undefined: the stream is gone). */
  hold(held: boolean): Promise<number | undefined> {
    if (this.#failure) return Promise.resolve(undefined);
    const frame = new Promise<number>((resolve) => this.#holds.push(resolve));
    this.#post({ type: held ? 'hold' : 'release' });
    return Promise.race([frame.then((f) => this.placeOf(f)), this.exited.then(() => undefined)]);
  }

  close(): void {
    this.#closing = true;
    this.#post({ type: 'close' });
  }

  kill(): void {
    this.#closing = true;
    this.#post({ type: 'kill' });
  }

  #post(message: unknown, transfer: TransferListItem[] = []): void {
    if (this.#worker) this.#worker.postMessage(message, transfer);
    else this.#queued.push([message, transfer]);
  }

  #on(message: FeederMessage): void {
    switch (message.type) {
      case 'spawned':
        this.pid = message.pid;
        return;
      case 'ready':
        // The feeder's clock (epoch ms) on this thread's performance.now().
        this.#anchorMs = message.anchor - performance.timeOrigin;
        this.options.log?.debug(`speaker stream on "${this.options.device}": ${STREAM_RATE} Hz mono, ALSA buffer ${Math.round((message.bufferFrames * 1000) / STREAM_RATE)} ms, period ${Math.round((message.periodFrames * 1000) / STREAM_RATE)} ms`);
        this.#settleReady[0]();
        return;
      case 'ended':
      case 'dropped': {
        const clip = this.#clips.get(message.id);
        this.#clips.delete(message.id);
        clip?.resolveEnd(message.end);
        return;
      }
      case 'held':
      case 'released':
        this.#holds.shift()?.(message.frame);
        return;
      case 'underrun':
        this.options.log?.warn(`speaker stream on "${this.options.device}": ${message.text} (the echo's delay may move)`);
        return;
      case 'error':
        this.#fail(message.code === 'ENOENT'
          ? alsaToolMissing('aplay')
          : new AudioError('audio_output', `speaker "${this.options.device}" failed: ${message.message}`));
        return;
      case 'exit': {
        const lines = message.stderr.split('\n').map((line) => line.trim()).filter(Boolean);
        const why = lines.filter((line) => line.startsWith('aplay:')).pop() ?? (message.code === null ? `aplay was killed (${message.signal})` : `aplay exited with ${message.code}`);
        this.#fail(new AudioError('audio_output', `speaker "${this.options.device}" failed: ${why}`));
      }
    }
  }

  /** The stream is gone: clips still queued end (stopped ones quietly), the next clip opens a new stream. */
  #fail(error: Error): void {
    if (!this.#failure) {
      this.#failure = error;
      this.onGone(this);
    }
    this.#settleReady[1](error);
    for (const [id, clip] of this.#clips) {
      this.#clips.delete(id);
      if (clip.signal.aborted || this.#closing) clip.resolveEnd(-1);
      else clip.reject(error);
    }
  }
}

/** The speaker stream: an `AudioSink` whose clips all share one timeline (module header). */
export class PlayerStream implements StreamSink {
  readonly #o: PlayerStreamOptions;
  #stream: OpenStream | undefined;
  /** The last stream's end: a new aplay opens the device only once the old one let it go. */
  #previous: Promise<void> = Promise.resolve();
  #idle: NodeJS.Timeout | undefined;

  constructor(options: PlayerStreamOptions) {
    this.#o = options;
  }

  /** The aplay now playing, if any (for tests and diagnostics). */
  get pid(): number | undefined {
    return this.#stream?.pid;
  }

  schedule(wav: Buffer, signal: AbortSignal): PlacedClip {
    const clip = monoSamples(wav);
    if (!clip) {
      const error = Promise.reject(new AudioError('audio_output', 'the speaker stream plays 16-bit PCM WAV only'));
      error.catch(() => undefined);
      return { at: error, done: error };
    }
    clearTimeout(this.#idle);
    const stream = (this.#stream ??= this.#open());
    const placed = stream.add(resampleClip(clip.samples, clip.rate, STREAM_RATE), signal);
    void placed.done.catch(() => undefined).finally(() => {
      if (this.#stream === stream && !stream.busy) this.#closeWhenIdle();
    });
    return placed;
  }

  async play(wav: Buffer, signal: AbortSignal): Promise<void> {
    if (signal.aborted) return;
    await this.schedule(wav, signal).done;
  }

  /** Silence now, the clips going on under it (`held`: a stop word being judged), or heard again; where on the clock (undefined: nothing open). */
  hold(held: boolean): Promise<number | undefined> {
    return this.#stream?.hold(held) ?? Promise.resolve(undefined);
  }

  /** Open the stream now, ahead of a clip (a wake word: a reply or a chime follows), so that clip does not wait for aplay to start. */
  open(): void {
    if (this.#stream) return;
    this.#stream = this.#open();
    this.#closeWhenIdle();
  }

  /** Let what is queued sound, then release the device (a player that does not exit within `CLOSE_MS` is killed). */
  async close(): Promise<void> {
    const stream = this.#detach();
    stream?.close();
    const late = setTimeout(() => stream?.kill(), CLOSE_MS);
    await this.#previous;
    clearTimeout(late);
  }

  /** Stop at once (the daemon is stopping). */
  async kill(): Promise<void> {
    this.#detach()?.kill();
    await this.#previous;
  }

  /** The open stream, no longer this sink's (the next clip opens another). */
  #detach(): OpenStream | undefined {
    clearTimeout(this.#idle);
    const stream = this.#stream;
    this.#stream = undefined;
    return stream;
  }

  #closeWhenIdle(): void {
    this.#idle = setTimeout(() => void this.close(), this.#o.idleS * 1000);
    this.#idle.unref();
  }

  #open(): OpenStream {
    const stream = new OpenStream(this.#o, this.#previous, (gone) => {
      if (this.#stream === gone) this.#stream = undefined;
    });
    this.#previous = stream.exited;
    return stream;
  }
}
