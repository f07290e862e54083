/**
 * Audio sources. `arecord` is the microphone: spawned with an argument vector, raw 16 kHz mono
 * S16_LE on stdout, re-framed into 80 ms chunks (a pipe delivers blocks of any size). A WAV
 * file is another, for `iris listen --file` and tests: the same frames, unpaced. Pushed audio
 * is the third: a satellite's chunks as they arrive over the network (daemon/rooms.ts).
 */
import { spawn } from 'node:child_process';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { IrisError } from '../errors.js';
import { FRAME_SAMPLES, FrameSplitter, SPEECH_FORMAT, type AudioChunk, type AudioSource } from './audio.js';
import { stopChild } from './child.js';

export class AudioError extends IrisError {
  override name = 'AudioError' as const;
}

/** An ALSA tool (arecord, aplay) that could not be started: alsa-utils is not installed. */
export function alsaToolMissing(tool: 'arecord' | 'aplay', cause?: unknown): AudioError {
  return new AudioError('audio_missing', `${tool} is not installed (apt install alsa-utils)`, cause === undefined ? undefined : { cause });
}

export interface ArecordOptions {
  /** ALSA capture device, e.g. "default" or "plughw:1,0". */
  device: string;
  /** The program; default arecord on PATH. */
  command?: string;
}

/**
 * Cut a stream of raw S16_LE blocks of any size (a pipe's) into FRAME_SAMPLES chunks stamped
 * with their position: the bytes become samples here (a block may end inside one), the frames
 * come from the one FrameSplitter.
 */
class S16Frames {
  readonly #frames = new FrameSplitter(FRAME_SAMPLES);
  #odd: Buffer = Buffer.alloc(0);
  #samples = 0;

  push(block: Buffer): AudioChunk[] {
    const bytes = this.#odd.length ? Buffer.concat([this.#odd, block]) : block;
    const samples = new Int16Array(bytes.length >> 1);
    for (let i = 0; i < samples.length; i++) samples[i] = bytes.readInt16LE(i * 2);
    this.#odd = bytes.subarray(samples.length * 2);
    const atS = this.#samples / SPEECH_FORMAT.rate;
    this.#samples += samples.length;
    return this.#frames.split({ ...SPEECH_FORMAT, samples, atS }).map((frame) => ({ ...SPEECH_FORMAT, ...frame }));
  }
}

/**
 * arecord's arguments for raw 16 kHz mono S16_LE from `device` (the daemon's and doctor's), in
 * periods of one frame (80 ms; arecord's default is a quarter of its 500 ms buffer): each block
 * then ends where a frame does, so every frame's arrival tells the live clock when it was
 * captured (echo.ts `liveClock`), not one frame in 2 s.
 */
export const arecordArgs = (device: string): string[] =>
  ['-q', '-D', device, '-f', 'S16_LE', '-r', String(SPEECH_FORMAT.rate), '-c', String(SPEECH_FORMAT.channels), '-t', 'raw', '-F', String((FRAME_SAMPLES / SPEECH_FORMAT.rate) * 1e6)];

export function arecordSource(options: ArecordOptions): AudioSource {
  return {
    async *frames(signal) {
      const child = spawn(options.command ?? 'arecord', arecordArgs(options.device), { stdio: ['ignore', 'pipe', 'pipe'] });
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      // Listened for from the start: a microphone that vanishes ends the stream after arecord
      // has already closed, and 'close' does not fire twice.
      const closed = new Promise<string>((resolve) => child.once('close', (code, killedBy) => resolve(killedBy ? `arecord was killed (${killedBy})` : `arecord exited with ${code}`)));
      const spawnError = new Promise<NodeJS.ErrnoException>((resolve) => child.once('error', resolve));
      const onAbort = () => void stopChild(child);
      signal.addEventListener('abort', onAbort, { once: true });
      const reframer = new S16Frames();
      try {
        for await (const block of child.stdout) {
          yield* reframer.push(block as Buffer);
          if (signal.aborted) return;
          // Buffered blocks resolve as microtasks: without a turn of the event loop, a source
          // faster than real time (a file device) would starve signals and timers.
          await nextTurn();
        }
        if (signal.aborted) return;
        const ending = await Promise.race([closed, spawnError]);
        if (typeof ending !== 'string' && ending.code === 'ENOENT') throw alsaToolMissing('arecord', ending);
        throw new AudioError('audio_input', `microphone "${options.device}" stopped: ${stderr.trim().split('\n').pop() || (typeof ending === 'string' ? ending : ending.message)}`);
      } finally {
        signal.removeEventListener('abort', onAbort);
        await stopChild(child);
      }
    },
  };
}

/** The samples of a decoded file as a source of 80 ms frames, as fast as they are read. */
export function samplesSource(samples: Int16Array): AudioSource {
  return {
    async *frames(signal) {
      for (let offset = 0; offset < samples.length && !signal.aborted; offset += FRAME_SAMPLES) {
        const frame = new Int16Array(FRAME_SAMPLES); // the last one padded with silence
        frame.set(samples.subarray(offset, offset + FRAME_SAMPLES));
        await nextTurn(); // a long file must not starve timers and the control socket
        yield { ...SPEECH_FORMAT, samples: frame, atS: offset / SPEECH_FORMAT.rate };
      }
    },
  };
}

/**
 * Audio pushed in as it arrives (a satellite's `audio-chunk`s), read as 80 ms frames. What is
 * not read yet waits, up to `maxBufferedS`; past that the oldest is dropped (a reader that fell
 * that far behind would answer too late anyway).
 */
export class PushedAudio implements AudioSource {
  readonly #splitter = new FrameSplitter(FRAME_SAMPLES);
  readonly #frames: (AudioChunk & { receivedMs: number })[] = [];
  readonly #maxFrames: number;
  /** When recent frames arrived (performance.now()), by where they start in the stream: ~10 s kept. */
  readonly #arrivals: { atS: number; receivedMs: number }[] = [];
  #readingMs = 0;
  #lastPushMs = 0;
  #atS = 0;
  /** Samples pushed so far. */
  #samples = 0;
  #wake: (() => void) | undefined;
  /** Pushers waiting for room (`whenRoom`). */
  #roomWaiters: (() => void)[] = [];
  #ended = false;
  /** Frames dropped because nobody read them in time. */
  dropped = 0;

  constructor(maxBufferedS = 30) {
    this.#maxFrames = Math.ceil((maxBufferedS * SPEECH_FORMAT.rate) / FRAME_SAMPLES);
  }

  /** When the frame being read now arrived (performance.now() ms; 0 before the first). */
  get readingMs(): number {
    return this.#readingMs;
  }

  /** When audio last arrived (performance.now() ms; 0 before the first). */
  get lastPushMs(): number {
    return this.#lastPushMs;
  }

  /** When the audio at stream second `atS` arrived (performance.now() ms), while it is recent. */
  receivedAt(atS: number): number | undefined {
    for (let i = this.#arrivals.length - 1; i >= 0; i--) {
      const arrival = this.#arrivals[i];
      if (arrival !== undefined && arrival.atS <= atS) return arrival.receivedMs;
    }
    return undefined;
  }

  /** 16 kHz mono samples, in order. */
  push(samples: Int16Array, receivedMs = performance.now()): void {
    if (this.#ended || samples.length === 0) return;
    this.#lastPushMs = receivedMs;
    for (const frame of this.#splitter.split({ ...SPEECH_FORMAT, samples, atS: this.#atS })) {
      this.#frames.push({ ...SPEECH_FORMAT, samples: frame.samples.slice(), atS: frame.atS, receivedMs });
      this.#arrivals.push({ atS: frame.atS, receivedMs });
    }
    if (this.#arrivals.length > 128) this.#arrivals.splice(0, this.#arrivals.length - 128); // 128 frames: ~10 s
    this.#atS += samples.length / SPEECH_FORMAT.rate;
    this.#samples += samples.length;
    while (this.#frames.length > this.#maxFrames) {
      this.#frames.shift();
      this.dropped += 1;
    }
    this.#wake?.();
  }

  /**
   * The sender stopped streaming (a satellite's `audio-stop`; it may start again): the last
   * partial frame is padded with silence, and the reader then gets a `stopped` chunk.
   */
  stop(receivedMs = performance.now()): void {
    if (this.#ended) return;
    const partial = this.#samples % FRAME_SAMPLES;
    if (partial > 0) this.push(new Int16Array(FRAME_SAMPLES - partial), receivedMs);
    this.#frames.push({ ...SPEECH_FORMAT, samples: new Int16Array(0), atS: this.#atS, stopped: true, receivedMs });
    this.#wake?.();
  }

  /** No more audio: the reader ends once it has read what is buffered. */
  end(): void {
    this.#ended = true;
    this.#wake?.();
    this.#makeRoom();
  }

  /**
   * Resolves once fewer than `maxBufferedS` wait unread (or the audio ended): a pusher that can
   * wait (a file, a pipe) waits here instead of having the oldest dropped.
   */
  whenRoom(): Promise<void> {
    if (this.#ended || this.#frames.length < this.#maxFrames) return Promise.resolve();
    return new Promise((resolve) => this.#roomWaiters.push(resolve));
  }

  #makeRoom(): void {
    if (!this.#ended && this.#frames.length >= this.#maxFrames) return;
    for (const resolve of this.#roomWaiters.splice(0)) resolve();
  }

  async *frames(signal: AbortSignal): AsyncIterable<AudioChunk> {
    const onAbort = () => this.#wake?.();
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      while (!signal.aborted) {
        const frame = this.#frames.shift();
        if (frame !== undefined) {
          this.#makeRoom();
          const { receivedMs, ...chunk } = frame;
          this.#readingMs = receivedMs;
          yield chunk;
          continue;
        }
        if (this.#ended) return;
        await new Promise<void>((resolve) => (this.#wake = resolve));
        this.#wake = undefined;
      }
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
  }
}
