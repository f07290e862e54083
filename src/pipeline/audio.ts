/**
 * Audio as data with its format attached (the Wyoming protocol's idea): every chunk says its
 * rate, sample width and channel count, and when it starts. The voice path works in 16 kHz mono
 * signed 16-bit PCM end to end; a source that cannot deliver that is an error, not a guess.
 */

export interface AudioFormat {
  /** Samples per second. */
  rate: number;
  /** Bytes per sample (2 = signed 16-bit little-endian). */
  width: number;
  channels: number;
}

export interface AudioChunk extends AudioFormat {
  samples: Int16Array;
  /** Where the chunk starts, in seconds from the start of the stream. */
  atS: number;
  /**
   * The sender stopped streaming here (a satellite's `audio-stop`): this chunk has no samples,
   * a command being spoken ends as at the end of a file, and any audio after it is a new stream.
   */
  stopped?: true;
}

/** What wake word, VAD and STT models are trained on. */
export const SPEECH_FORMAT: Readonly<AudioFormat> = Object.freeze({ rate: 16_000, width: 2, channels: 1 });

/** 80 ms at 16 kHz: openWakeWord's step; the pipeline's frame size. */
export const FRAME_SAMPLES = 1280;

/** An `AudioSource` yields chunks until it ends or the signal aborts. */
export interface AudioSource {
  frames(signal: AbortSignal): AsyncIterable<AudioChunk>;
}

/** An `AudioSink` plays one WAV to the end, or stops at once when the signal aborts. */
export interface AudioSink {
  /**
   * Play `wav`; resolves when it has sounded (or `signal` stopped it). The sound starts once the
   * synchronous part of the call is over, not before (aplay: once spawned): the `Speaker` stamps
   * its echo reference then.
   */
  play(wav: Buffer, signal: AbortSignal): Promise<void>;
}

/** Where a clip sounds on a `StreamSink`'s timeline, in live clock samples (16 kHz, `EchoReference.nowSamples`). */
export interface PlacedClip {
  /** Where its first sample sounds on the clock (not rounded: between two of the clock's samples). */
  at: Promise<number>;
  /** Where its sound ended: its end, or where the signal cut it. Settles after `at`; rejects as `play` does. */
  done: Promise<number>;
}

/** A sink that keeps one stream open (pipeline/player.ts): it says where on its timeline each clip sounds. */
export interface StreamSink extends AudioSink {
  schedule(wav: Buffer, signal: AbortSignal): PlacedClip;
  /** Open the stream ahead of a clip. */
  open(): void;
  /**
   * Silence from now on, the clips going on under it (`held`), or the clips heard again: resolves
   * with where on the clock that happened (not rounded; undefined: no stream open).
   */
  hold(held: boolean): Promise<number | undefined>;
  /** Let what is queued sound, then release the device. */
  close(): Promise<void>;
}

export const isStreamSink = (sink: AudioSink): sink is StreamSink => 'schedule' in sink;

export const durationS = (samples: number, format: AudioFormat = SPEECH_FORMAT): number =>
  samples / (format.rate * format.channels);

/** The mean of the squared samples (0 for none). */
export function meanPower(samples: ArrayLike<number>): number {
  let sum = 0;
  for (let i = 0; i < samples.length; i++) sum += (samples[i] ?? 0) ** 2;
  return samples.length === 0 ? 0 : sum / samples.length;
}

/** Concatenate PCM chunks into one array. */
export function concatSamples(parts: readonly Int16Array[]): Int16Array {
  const out = new Int16Array(parts.reduce((sum, part) => sum + part.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

/**
 * Cuts chunks of any size into fixed frames (a model's input size), carrying the remainder to
 * the next chunk, so audio in the middle of a big block is scored like any other.
 */
export class FrameSplitter {
  #pending: Int16Array = new Int16Array(0);
  #pendingAtS = 0;

  constructor(readonly size: number) {}

  /** The whole frames `chunk` completes, each with where it starts in the stream (seconds). */
  split(chunk: AudioChunk): { samples: Int16Array; atS: number }[] {
    const samples = concatSamples([this.#pending, chunk.samples]);
    const startS = this.#pending.length ? this.#pendingAtS : chunk.atS;
    const frames: { samples: Int16Array; atS: number }[] = [];
    let offset = 0;
    for (; offset + this.size <= samples.length; offset += this.size) {
      frames.push({ samples: samples.subarray(offset, offset + this.size), atS: startS + offset / chunk.rate });
    }
    this.#pending = samples.slice(offset);
    this.#pendingAtS = startS + offset / chunk.rate;
    return frames;
  }

  reset(): void {
    this.#pending = new Int16Array(0);
  }
}
