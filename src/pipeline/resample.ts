/**
 * Linear resampling, the one IRIS uses where speed matters more than fidelity: the echo
 * reference made while a clip plays (playback.ts) and the recogniser's check decodes of the
 * audio played faster and slower (pocketsphinx.ts). wavefile's sinc resampler (decodeWav) is
 * the careful one, and takes 0.6 s for 7 s of espeak-ng's 22,050 Hz.
 */
import { SPEECH_FORMAT } from './audio.js';
import { wavInfo } from './wav.js';

/**
 * Linear resampling of a stream, state carried across blocks: output sample i is input sample
 * i × `step` (step = input rate / output rate; 1.08 plays the audio 8 % faster, pitch and tempo
 * together), interpolated between its two neighbours.
 */
export class Resampler {
  #position = 0;
  #last = 0;
  constructor(readonly step: number) {}

  push(block: ArrayLike<number>): Int16Array {
    const out: number[] = [];
    // Positions are relative to this block, where index -1 is the previous block's last sample.
    for (; this.#position < block.length - 1; this.#position += this.step) {
      const k = Math.floor(this.#position);
      const a = this.#position - k;
      const left = k < 0 ? this.#last : (block[k] ?? 0);
      const right = block[k + 1] ?? 0;
      out.push(Math.round(left * (1 - a) + right * a));
    }
    this.#position -= block.length;
    this.#last = block[block.length - 1] ?? 0;
    return Int16Array.from(out);
  }
}

/**
 * A clip as 16 kHz mono for the echo reference, quickly: it is made while the clip plays. A
 * two-tap low-pass and linear interpolation take a few ms, and the canceller's adaptive filter
 * absorbs the small difference. Undefined for a WAV that is not 16-bit PCM (the player reports it).
 */
export function referenceSamples(wav: Buffer): Int16Array | undefined {
  let info: ReturnType<typeof wavInfo>;
  try {
    info = wavInfo(wav);
  } catch {
    return undefined;
  }
  if (info.width !== 2) return undefined;
  const frames = Math.floor(Math.min(info.dataBytes, wav.length - info.dataOffset) / (2 * info.channels));
  const mono = new Float32Array(frames);
  for (let i = 0; i < frames; i++) {
    let sum = 0;
    for (let c = 0; c < info.channels; c++) sum += wav.readInt16LE(info.dataOffset + (i * info.channels + c) * 2);
    mono[i] = sum / info.channels;
  }
  if (info.rate === SPEECH_FORMAT.rate) return Int16Array.from(mono, Math.round);
  // Neighbours averaged first (1-2-1): a gentle low-pass against aliasing when going down in rate.
  const smooth = mono.map((x, i) => ((mono[i - 1] ?? x) + 2 * x + (mono[i + 1] ?? x)) / 4);
  return new Resampler(info.rate / SPEECH_FORMAT.rate).push(smooth);
}
