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
  #position: number;
  #last = 0;
  /** `start`: the input position of output sample 0 (0 ≤ start; a clip placed between two output samples). */
  constructor(readonly step: number, start = 0) {
    this.#position = start;
  }

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

/** A 16-bit WAV's samples, channels averaged, and its rate; undefined for any other WAV. */
export function monoSamples(wav: Buffer): { samples: Float32Array; rate: number } | undefined {
  let info: ReturnType<typeof wavInfo>;
  try {
    info = wavInfo(wav);
  } catch {
    return undefined;
  }
  if (info.width !== 2) return undefined;
  const frames = Math.floor(Math.min(info.dataBytes, wav.length - info.dataOffset) / (2 * info.channels));
  const samples = new Float32Array(frames);
  for (let i = 0; i < frames; i++) {
    let sum = 0;
    for (let c = 0; c < info.channels; c++) sum += wav.readInt16LE(info.dataOffset + (i * info.channels + c) * 2);
    samples[i] = sum / info.channels;
  }
  return { samples, rate: info.rate };
}

/**
 * A clip as 16 kHz mono for the echo reference, quickly: it is made while the clip plays. A
 * two-tap low-pass and linear interpolation take a few ms, and the canceller's adaptive filter
 * absorbs the small difference. `offset` (0–1 of a 16 kHz sample): the clip starts that long
 * before the first output sample — a speaker stream places clips between the reference's
 * samples, and a clip rounded to the nearest one stands up to half a sample off its neighbours,
 * which the filter takes ~0.5 s to learn (docs/room.md, "Clip starts"). Undefined for a WAV that
 * is not 16-bit PCM (the player reports it).
 */
export function referenceSamples(wav: Buffer, offset = 0): Int16Array | undefined {
  const clip = monoSamples(wav);
  if (!clip) return undefined;
  const { samples: mono, rate } = clip;
  if (rate === SPEECH_FORMAT.rate && offset === 0) return Int16Array.from(mono, Math.round);
  const step = rate / SPEECH_FORMAT.rate;
  // Neighbours averaged first (1-2-1) when going down in rate: a gentle low-pass against aliasing.
  const smooth = rate > SPEECH_FORMAT.rate ? mono.map((x, i) => ((mono[i - 1] ?? x) + 2 * x + (mono[i + 1] ?? x)) / 4) : mono;
  return new Resampler(step, offset * step).push(smooth);
}

/** Zero crossings of the band-limited resampler's sinc on each side: ~0.5 ms of audio at 16 kHz. */
const SINC_ZEROS = 8;

/**
 * A whole clip from `from` Hz to `to` Hz for a person to hear (the speaker stream plays one
 * rate): Hann-windowed sinc interpolation, cut at the lower rate's Nyquist frequency, so
 * neither images (going up) nor aliases (going down) are heard. Linear interpolation leaves
 * images of a 16 kHz voice above 8 kHz at 22,050 Hz.
 */
export function resampleClip(samples: ArrayLike<number>, from: number, to: number): Int16Array {
  const out = new Int16Array(Math.floor((samples.length * to) / from));
  if (from === to) {
    for (let i = 0; i < out.length; i++) out[i] = Math.round(samples[i] ?? 0);
    return out;
  }
  const cutoff = Math.min(1, to / from); // of the input's Nyquist frequency
  const width = SINC_ZEROS / cutoff; // input samples each side
  for (let i = 0; i < out.length; i++) {
    const u = (i * from) / to;
    let sum = 0;
    for (let k = Math.ceil(u - width); k <= u + width; k++) {
      const d = u - k;
      const x = Math.PI * cutoff * d;
      const tap = cutoff * (d === 0 ? 1 : Math.sin(x) / x) * (0.5 + 0.5 * Math.cos((Math.PI * d) / width));
      sum += tap * (samples[k] ?? 0);
    }
    out[i] = Math.max(-32768, Math.min(32767, Math.round(sum)));
  }
  return out;
}
