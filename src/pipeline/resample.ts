/**
 * Resampling: linear where speed matters more than fidelity (the recogniser's check decodes of
 * the audio played faster and slower, pocketsphinx.ts), band-limited where what is heard or
 * cancelled depends on it (the speaker stream's clips, player.ts; the echo reference made as a
 * clip starts to play, playback.ts): a windowed sinc read from a table, ~5 ms per second of
 * audio. wavefile's sinc resampler (decodeWav) takes 0.6 s for 7 s of espeak-ng's 22,050 Hz.
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
 * A clip as 16 kHz mono for the echo reference, made as the clip starts to play: band-limited as
 * the speaker's own stream is (`resampleClip`), ~5 ms per second of audio. `offset` (0–1 of a
 * 16 kHz sample): the clip starts that long before the first output sample — a speaker stream
 * places clips between the reference's samples, and a clip rounded to the nearest one stands up
 * to half a sample off its neighbours, which the filter takes ~0.5 s to learn (docs/room.md,
 * "Clip starts"). Until session 23 a two-tap low-pass and linear interpolation made it: it left
 * espeak-ng's 7–10 kHz low and aliased (a 7 kHz tone 13 dB low, 2 dB clean), so a sibilant's echo stood 6–15 dB over
 * the residual the canceller left of the rest (an early answer's own "s" took it back), and the
 * canceller took ~2 dB less overall (docs/room.md, "The echo reference band-limited").
 * Undefined for a WAV that is not 16-bit PCM (the player reports it).
 */
export function referenceSamples(wav: Buffer, offset = 0): Int16Array | undefined {
  const clip = monoSamples(wav);
  if (!clip) return undefined;
  return resampleClip(clip.samples, clip.rate, SPEECH_FORMAT.rate, offset);
}

/** Zero crossings of the band-limited resampler's sinc on each side (~1 ms of audio at 16 kHz): 8 left a 7 kHz tone 21 dB clean at 16 kHz, 16 43 dB. */
const SINC_ZEROS = 16;
/** Phases of an input sample the windowed sinc is tabled at: a tap is read at most 1/(2 × this) of a sample off (a 4 kHz tone ~58 dB clean). */
const SINC_PHASES = 256;
/** Per cut-off (of the input's Nyquist frequency): `taps` input samples each side, and the Hann-windowed sinc's taps at each phase, one after another. */
const sincTables = new Map<number, { taps: number; phases: Float64Array }>();

function sincTable(cutoff: number): { taps: number; phases: Float64Array } {
  let table = sincTables.get(cutoff);
  if (!table) {
    const width = SINC_ZEROS / cutoff; // input samples each side
    const taps = Math.ceil(width);
    const phases = new Float64Array((SINC_PHASES + 1) * 2 * taps);
    for (let p = 0; p <= SINC_PHASES; p++) {
      for (let j = 0; j < 2 * taps; j++) {
        const d = p / SINC_PHASES + taps - 1 - j; // the output's place less the input sample's
        const x = Math.PI * cutoff * d;
        phases[p * 2 * taps + j] = Math.abs(d) > width ? 0 : cutoff * (d === 0 ? 1 : Math.sin(x) / x) * (0.5 + 0.5 * Math.cos((Math.PI * d) / width));
      }
    }
    table = { taps, phases };
    sincTables.set(cutoff, table);
  }
  return table;
}

/**
 * A whole clip from `from` Hz to `to` Hz (the speaker stream plays one rate; the echo reference is
 * 16 kHz): Hann-windowed sinc interpolation, cut at the lower rate's Nyquist frequency, so
 * neither images (going up) nor aliases (going down) are heard. Linear interpolation leaves
 * images of a 16 kHz voice above 8 kHz at 22,050 Hz. `offset`: as `referenceSamples`' (output
 * samples the clip starts before the first one).
 */
export function resampleClip(samples: ArrayLike<number>, from: number, to: number, offset = 0): Int16Array {
  const step = from / to;
  const out = new Int16Array(Math.max(0, Math.floor((samples.length - offset * step) / step)));
  if (from === to && offset === 0) {
    for (let i = 0; i < out.length; i++) out[i] = Math.round(samples[i] ?? 0);
    return out;
  }
  const { taps, phases } = sincTable(Math.min(1, to / from));
  const n = samples.length;
  for (let i = 0; i < out.length; i++) {
    const u = (i + offset) * step;
    const k = Math.floor(u);
    const row = Math.round((u - k) * SINC_PHASES) * 2 * taps;
    const first = k - taps + 1;
    let sum = 0;
    if (first >= 0 && first + 2 * taps <= n) {
      for (let j = 0; j < 2 * taps; j++) sum += (phases[row + j] as number) * (samples[first + j] as number);
    } else {
      for (let j = Math.max(0, -first); j < 2 * taps && first + j < n; j++) sum += (phases[row + j] as number) * (samples[first + j] as number);
    }
    out[i] = Math.max(-32768, Math.min(32767, Math.round(sum)));
  }
  return out;
}
