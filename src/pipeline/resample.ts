/**
 * Linear resampling, the one IRIS uses where speed matters more than fidelity: the echo
 * reference made while a clip plays (playback.ts) and the recogniser's check decodes of the
 * audio played faster and slower (pocketsphinx.ts). wavefile's sinc resampler (decodeWav) is
 * the careful one, and takes 0.6 s for 7 s of espeak-ng's 22,050 Hz.
 */
import { SPEECH_FORMAT } from './audio.js';
import { wavInfo } from './wav.js';

export interface ResampleOptions {
  /** Average each sample with its neighbours (1-2-1) first: a gentle low-pass against aliasing
   * when going down in rate; default false. */
  smooth?: boolean;
}

/**
 * `samples` read every `step` samples (step = input rate / output rate; 1.08 plays the audio
 * 8 % faster, pitch and tempo together), interpolating linearly between neighbours: output
 * sample i is at input position i × step, up to the last input sample.
 */
export function resample(samples: ArrayLike<number>, step: number, options: ResampleOptions = {}): Int16Array {
  const n = samples.length;
  const raw = (j: number): number => samples[j] ?? 0;
  const at = options.smooth ? (j: number): number => ((samples[j - 1] ?? samples[j] ?? 0) + 2 * raw(j) + (samples[j + 1] ?? samples[j] ?? 0)) / 4 : raw;
  const out = new Int16Array(n === 0 ? 0 : Math.floor((n - 1) / step) + 1);
  for (let i = 0; i < out.length; i++) {
    const x = i * step;
    const k = Math.floor(x);
    const a = x - k;
    out[i] = Math.round(at(k) * (1 - a) + at(k + 1) * a);
  }
  return out;
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
  return resample(mono, info.rate / SPEECH_FORMAT.rate, { smooth: true });
}
