/**
 * Audio sinks. `aplaySink` plays one WAV per `aplay` (the header carries the format), spawned
 * with an argument vector and killed at once when the turn is cancelled; the daemon's speaker
 * is the stream kept open instead (player.ts). `Speaker` is the one way out to either: everything IRIS plays
 * (replies, the earcon, announcements, ringing timers, `iris say`) goes through it, and it keeps
 * what it played, sample-timed, as the echo canceller's reference; it knows whether something
 * is playing (the stop word is armed only then) and can stop it all. The collecting sink writes
 * what would have been played into one WAV, for `iris listen --out` and tests. The earcon is a
 * short two-tone chime.
 */
import { spawn } from 'node:child_process';
import { AudioError, alsaToolMissing } from './capture.js';
import { stopChild } from './child.js';
import { isStreamSink, type AudioSink, type StreamSink } from './audio.js';
import { EchoReference } from './echo.js';
import { referenceSamples } from './resample.js';
import { encodeWav, wavInfo } from './wav.js';


/** The longest a hold lasts unless released (ms): a stop word's candidate is judged within 0.32 s of its word. */
const HOLD_MS = 1_000;

export interface AplayOptions {
  /** ALSA playback device. */
  device: string;
  /** The program; default aplay on PATH. */
  command?: string;
}

export function aplaySink(options: AplayOptions): AudioSink {
  return {
    play(wav, signal) {
      return new Promise((resolve, reject) => {
        if (signal.aborted) return resolve();
        const child = spawn(options.command ?? 'aplay', ['-q', '-D', options.device, '-'], { stdio: ['pipe', 'ignore', 'pipe'] });
        let stderr = '';
        child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
        const onAbort = () => void stopChild(child, 'SIGKILL');
        signal.addEventListener('abort', onAbort, { once: true });
        child.on('error', (error: NodeJS.ErrnoException) => {
          signal.removeEventListener('abort', onAbort);
          reject(error.code === 'ENOENT'
            ? alsaToolMissing('aplay', error)
            : error);
        });
        child.on('close', (code) => {
          signal.removeEventListener('abort', onAbort);
          if (code === 0 || signal.aborted) return resolve();
          reject(new AudioError('audio_output', `speaker "${options.device}" failed: ${stderr.trim().split('\n').pop() || `aplay exited with ${code}`}`));
        });
        child.stdin.on('error', () => undefined); // aplay killed mid-write
        child.stdin.end(wav);
      });
    },
  };
}

/**
 * The one way out to the speaker: plays through `out` and writes each clip, as 16 kHz mono,
 * into `reference` at the clock sample it sounds at; a clip stopped early is cut from the
 * reference where it stopped. On a `StreamSink` (player.ts, the daemon's) that place is the
 * clip's position on the stream's own timeline; on a per-clip sink, the clock once the player
 * has it.
 */
export class Speaker implements AudioSink {
  readonly reference: EchoReference;
  readonly #out: AudioSink;
  readonly #playing = new Set<AbortController>();
  readonly #clock: () => number;
  /** The clips placed on the stream and sounding (or held), with their reference: a release writes it again from there. */
  readonly #placed = new Set<{ first: number; samples: Int16Array }>();
  /** Held (`hold`): the sound is silent, and the reference too; the timer that lets it go if nothing does. */
  #held: NodeJS.Timeout | undefined;

  /** `clock`: the sample clock (default the live one; tests pass their own). */
  constructor(out: AudioSink, reference = new EchoReference(), clock: () => number = () => EchoReference.nowSamples()) {
    this.#out = out;
    this.reference = reference;
    this.#clock = clock;
  }

  /** Something is being played now. */
  get playing(): boolean {
    return this.#playing.size > 0;
  }

  async play(wav: Buffer, signal: AbortSignal): Promise<void> {
    if (signal.aborted) return;
    const controller = new AbortController();
    const both = AbortSignal.any([signal, controller.signal]);
    this.#playing.add(controller);
    try {
      if (isStreamSink(this.#out)) await this.#stream(this.#out, wav, both);
      else await this.#clip(this.#out, wav, both);
    } finally {
      this.#playing.delete(controller);
    }
  }

  /** On the stream: placed where it sounds on the stream's timeline, cut where the stream dropped it. */
  async #stream(out: StreamSink, wav: Buffer, signal: AbortSignal): Promise<void> {
    const { at, done } = out.schedule(wav, signal);
    let placed: { first: number; samples: Int16Array } | undefined;
    // Resampled from where the clip falls between two reference samples: rounded, each clip stood
    // up to half a sample off the one before, and the canceller left 6–18 dB of the first 0.4 s of
    // its echo instead of 30–40 while its filter learnt the shift (docs/room.md, "Clip starts").
    void at.then((start) => {
      const first = Math.ceil(start);
      const samples = referenceSamples(wav, first - start);
      if (!samples || signal.aborted) return;
      placed = { first, samples };
      this.#placed.add(placed);
      if (this.#held === undefined) this.reference.write(samples, first); // held: written when released
    }, () => undefined);
    try {
      const end = await done;
      if (signal.aborted) this.reference.truncate(end);
    } finally {
      if (placed) this.#placed.delete(placed);
    }
  }

  async #clip(out: AudioSink, wav: Buffer, signal: AbortSignal): Promise<void> {
    // Handed to the player first (the sound must not wait), stamped once it has it: spawning
    // aplay takes 3-25 ms on a loaded machine, and the echo's delay must not move with it.
    const playing = out.play(wav, signal);
    const at = this.#clock();
    const samples = referenceSamples(wav);
    if (samples) this.reference.write(samples, at);
    try {
      await playing;
    } finally {
      if (signal.aborted) this.reference.truncate(this.#clock());
    }
  }

  /**
   * Silence at once, the clips going on under it (`held`: a candidate "stop" is being judged, its
   * verdict 0.16 s away), or the clips heard again from where they have got to. Only on a stream
   * (a per-clip player cannot: nothing happens). The reference follows: silent from where the sound
   * was held, what the clips play written again from where they are released. A hold not released
   * within `HOLD_MS` is released.
   */
  hold(held: boolean): void {
    const out = this.#out;
    if (!isStreamSink(out) || held === (this.#held !== undefined)) return;
    clearTimeout(this.#held);
    this.#held = held ? setTimeout(() => this.hold(false), HOLD_MS) : undefined;
    this.#held?.unref();
    void out.hold(held).then((at) => {
      if (at === undefined) {
        if (held) this.hold(false); // no stream to hold: nothing is held, and clips that start now write their reference at once
        return;
      }
      const from = Math.ceil(at);
      if (held) this.reference.truncate(from);
      else for (const { first, samples } of this.#placed) if (first + samples.length > from) this.reference.write(samples.subarray(Math.max(0, from - first)), Math.max(first, from));
    }, () => undefined);
  }

  /** Stop everything playing now (the stop word), and any hold. Returns whether anything was. */
  stop(): boolean {
    this.#placed.clear(); // nothing to write again
    const any = this.#playing.size > 0;
    for (const controller of this.#playing) controller.abort(new DOMException('stopped', 'AbortError'));
    this.hold(false); // after the drops: the stream sounds again only once they are gone
    return any;
  }

  /** Something will be played soon: a stream opens now (it takes ~0.1 s to start). */
  warm(): void {
    if (isStreamSink(this.#out)) this.#out.open();
  }

  /** Release the speaker: a stream lets what is queued sound and closes. */
  async close(): Promise<void> {
    if (isStreamSink(this.#out)) await this.#out.close();
  }
}

/** A sink that keeps everything "played", as one WAV in the first clip's format. */
export class CollectingSink implements AudioSink {
  readonly #clips: Buffer[] = [];
  #rate = 0;

  play(wav: Buffer): Promise<void> {
    const info = wavInfo(wav);
    if (this.#rate === 0) this.#rate = info.rate;
    if (info.rate === this.#rate && info.channels === 1 && info.width === 2) {
      this.#clips.push(wav.subarray(info.dataOffset, info.dataOffset + info.dataBytes));
    }
    return Promise.resolve();
  }

  get clips(): number {
    return this.#clips.length;
  }

  wav(): Buffer {
    const pcm = Buffer.concat(this.#clips);
    const samples = new Int16Array(pcm.buffer, pcm.byteOffset, pcm.length >> 1);
    return encodeWav(samples.slice(), { rate: this.#rate || 16_000, width: 2, channels: 1 });
  }
}

/** "Listening": two rising sine tones, 90 ms each, soft edges so they do not click. */
export function earcon(rate = 16_000): Buffer {
  const toneS = 0.09;
  const tones = [880, 1320];
  const perTone = Math.round(rate * toneS);
  const samples = new Int16Array(perTone * tones.length);
  tones.forEach((hz, t) => {
    for (let i = 0; i < perTone; i++) {
      const edge = Math.min(1, i / (perTone * 0.15), (perTone - i) / (perTone * 0.15));
      samples[t * perTone + i] = Math.round(Math.sin((2 * Math.PI * hz * i) / rate) * 9_000 * edge);
    }
  });
  return encodeWav(samples, { rate, width: 2, channels: 1 });
}
