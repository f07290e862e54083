/**
 * Writes a structurally valid legacy ggml whisper.cpp model (`.bin`) filled with random weights,
 * for plumbing and cost tests where no real model can be downloaded (notes/speech.md §5,
 * "Random-weight ggml model"). It loads and runs like a real model of the same shape, at the
 * same cost; its transcripts are gibberish, so assert only that a run succeeds.
 *
 * Run: `npx tsx scripts/make-whisper-model.ts --shape micro|tiny|base --out FILE [--seed N]`.
 * Deterministic for a given seed. Written in 1 MiB pieces, so memory stays flat (tiny is 78 MB,
 * base 148 MB).
 */
import { closeSync, openSync, writeSync } from 'node:fs';
import { endianness } from 'node:os';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { SPEECH_FORMAT } from '../src/pipeline/audio.js';
import { GGML_MAGIC } from '../src/pipeline/whisper.js';

export type WhisperShape = 'micro' | 'tiny' | 'base';

interface HParams {
  nVocab: number;
  nAudioCtx: number;
  nTextCtx: number;
  nMels: number;
  /** Width of every layer (audio state = text state). */
  state: number;
  heads: number;
  layers: number;
}

/** The .en shapes of openai/whisper (n_vocab 51864 = English-only); micro is a CI-sized stand-in. */
const SHAPES: Record<WhisperShape, HParams> = {
  micro: { nVocab: 51_864, nAudioCtx: 1500, nTextCtx: 448, nMels: 80, state: 64, heads: 1, layers: 1 },
  tiny: { nVocab: 51_864, nAudioCtx: 1500, nTextCtx: 448, nMels: 80, state: 384, heads: 6, layers: 4 },
  base: { nVocab: 51_864, nAudioCtx: 1500, nTextCtx: 448, nMels: 80, state: 512, heads: 8, layers: 6 },
};

export const WHISPER_SHAPES = Object.keys(SHAPES) as WhisperShape[];

/** Tokens in the file; whisper.cpp adds the special tokens (EOT at 50256 onwards) itself. */
const N_FILE_TOKENS = 50_256;
/** Whisper's front end: 16 kHz, 25 ms window (n_fft 400 → 201 bins). */
const SAMPLE_RATE = SPEECH_FORMAT.rate;
const N_FFT = 400;

/** Tensor data is generated and written this many values at a time (256 KiB of f32). */
const CHUNK_VALUES = 65_536;

const F32 = 0;
const F16 = 1;

/**
 * Seeded standard normal deviates: mulberry32 (a small, fast 32-bit PRNG) for uniforms, Box–Muller
 * for normals, two per pair of uniforms. Filled in bulk (tiny alone needs ~39 M of them).
 */
class Normals {
  private state: number;
  /** The second deviate of a pair that did not fit in the last call's output, or NaN. */
  private spare = NaN;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  /** out[0..n) = N(0, 1) × scale. */
  fill(out: Float32Array, n: number, scale: number): void {
    let state = this.state;
    let i = 0;
    if (!Number.isNaN(this.spare) && n > 0) {
      out[i++] = this.spare * scale;
      this.spare = NaN;
    }
    for (; i < n; i += 2) {
      state = (state + 0x6d2b79f5) | 0;
      let t = Math.imul(state ^ (state >>> 15), state | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      const u1 = ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
      state = (state + 0x6d2b79f5) | 0;
      t = Math.imul(state ^ (state >>> 15), state | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      const u2 = ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
      const r = Math.sqrt(-2 * Math.log(1 - u1)); // 1 - u1 ∈ (0, 1]: no log(0)
      const angle = (u2 * ANGLES) | 0;
      const cos = COS[angle] ?? 0;
      const sin = SIN[angle] ?? 0;
      out[i] = r * cos * scale;
      if (i + 1 < n) out[i + 1] = r * sin * scale;
      else this.spare = r * sin;
    }
    this.state = state;
  }
}

/**
 * Box–Muller's angle 2πu, quantised to 2^16 steps and tabulated (a fifth off a tiny model's
 * write time, against calling Math.cos and Math.sin); 16 bits of angle is plenty for random weights.
 */
const ANGLES = 65_536;
const COS = Float64Array.from({ length: ANGLES }, (_, k) => Math.cos((2 * Math.PI * k) / ANGLES));
const SIN = Float64Array.from({ length: ANGLES }, (_, k) => Math.sin((2 * Math.PI * k) / ANGLES));

/**
 * IEEE 754 binary16 bits of the float32 whose bits are `x`, rounded to nearest even (Node 18 has
 * no Float16Array).
 */
export function halfBits(x: number): number {
  const sign = (x >>> 16) & 0x8000;
  const exp = (x >>> 23) & 0xff;
  let mant = x & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0); // Inf / NaN
  const e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00; // overflow → Inf
  if (e <= 0) {
    if (e < -10) return sign; // underflow → ±0
    mant |= 0x800000; // subnormal: make the leading 1 explicit, then shift it in
    const shift = 14 - e;
    const half = 1 << (shift - 1);
    const rest = mant & ((1 << shift) - 1);
    let out = mant >>> shift;
    if (rest > half || (rest === half && out & 1)) out += 1;
    return sign | out;
  }
  let out = sign | (e << 10) | (mant >>> 13);
  const rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest === 0x1000 && out & 1)) out += 1; // a carry into the exponent is correct
  return out;
}

/** Slaney mel scale (librosa's default, which openai/whisper's filters use). */
const F_SP = 200 / 3;
const MIN_LOG_HZ = 1000;
const MIN_LOG_MEL = MIN_LOG_HZ / F_SP;
const LOG_STEP = Math.log(6.4) / 27;
const hzToMel = (hz: number): number => (hz < MIN_LOG_HZ ? hz / F_SP : MIN_LOG_MEL + Math.log(hz / MIN_LOG_HZ) / LOG_STEP);
const melToHz = (mel: number): number => (mel < MIN_LOG_MEL ? mel * F_SP : MIN_LOG_HZ * Math.exp(LOG_STEP * (mel - MIN_LOG_MEL)));

/** An nMels × (N_FFT/2+1) Slaney-normalised triangular mel filterbank, 0 Hz to Nyquist, row-major. */
export function melFilterbank(nMels: number): Float32Array {
  const nBins = N_FFT / 2 + 1;
  const out = new Float32Array(nMels * nBins);
  const top = hzToMel(SAMPLE_RATE / 2);
  const edges = Array.from({ length: nMels + 2 }, (_, i) => melToHz((top * i) / (nMels + 1)));
  for (let m = 0; m < nMels; m++) {
    const [lo, mid, hi] = [edges[m] ?? 0, edges[m + 1] ?? 0, edges[m + 2] ?? 0];
    const norm = 2 / (hi - lo); // Slaney: constant energy per band
    for (let k = 0; k < nBins; k++) {
      const hz = (k * SAMPLE_RATE) / N_FFT;
      const weight = Math.max(0, Math.min((hz - lo) / (mid - lo), (hi - hz) / (hi - mid)));
      out[m * nBins + k] = weight * norm;
    }
  }
  return out;
}

/** A buffered little-endian writer to a file descriptor. */
class Writer {
  private readonly buf = Buffer.allocUnsafe(1 << 20);
  private at = 0;
  bytes = 0;

  constructor(private readonly fd: number) {}

  flush(): void {
    let done = 0;
    while (done < this.at) done += writeSync(this.fd, this.buf, done, this.at - done);
    this.bytes += this.at;
    this.at = 0;
  }

  i32(value: number): void {
    if (this.at + 4 > this.buf.length) this.flush();
    this.at = this.buf.writeInt32LE(value, this.at);
  }

  /** Raw bytes; typed arrays go in as they are in memory, so little-endian hosts only. */
  raw(data: ArrayBufferView): void {
    const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    for (let from = 0; from < bytes.length; ) {
      if (this.at === this.buf.length) this.flush();
      const n = Math.min(bytes.length - from, this.buf.length - this.at);
      this.buf.set(bytes.subarray(from, from + n), this.at);
      this.at += n;
      from += n;
    }
  }
}

/** What fills a tensor: layer-norm weights 1, biases 0, matrices N(0,1)×scale. */
type Fill = { kind: 'ones' } | { kind: 'zeros' } | { kind: 'normal'; scale: number };

interface TensorSpec {
  name: string;
  /** PyTorch order (the file stores them reversed, ggml order). */
  shape: number[];
  fill: Fill;
}

/** Matrices N(0, 0.02²); positional embeddings N(0, 0.1²) (notes/speech.md §5). */
const MATRIX: Fill = { kind: 'normal', scale: 0.02 };
const POSITIONAL: Fill = { kind: 'normal', scale: 0.1 };
const ONES: Fill = { kind: 'ones' };
const ZEROS: Fill = { kind: 'zeros' };

function tensors(h: HParams): TensorSpec[] {
  const S = h.state;
  const list: TensorSpec[] = [];
  const add = (name: string, shape: number[], fill: Fill) => list.push({ name, shape, fill });
  const layerNorm = (prefix: string) => {
    add(`${prefix}.weight`, [S], ONES);
    add(`${prefix}.bias`, [S], ZEROS);
  };
  const attention = (prefix: string) => {
    add(`${prefix}.query.weight`, [S, S], MATRIX);
    add(`${prefix}.query.bias`, [S], ZEROS);
    add(`${prefix}.key.weight`, [S, S], MATRIX); // no key bias in Whisper
    add(`${prefix}.value.weight`, [S, S], MATRIX);
    add(`${prefix}.value.bias`, [S], ZEROS);
    add(`${prefix}.out.weight`, [S, S], MATRIX);
    add(`${prefix}.out.bias`, [S], ZEROS);
  };
  const block = (prefix: string, cross: boolean) => {
    attention(`${prefix}.attn`);
    layerNorm(`${prefix}.attn_ln`);
    if (cross) {
      attention(`${prefix}.cross_attn`);
      layerNorm(`${prefix}.cross_attn_ln`);
    }
    add(`${prefix}.mlp.0.weight`, [4 * S, S], MATRIX);
    add(`${prefix}.mlp.0.bias`, [4 * S], ZEROS);
    add(`${prefix}.mlp.2.weight`, [S, 4 * S], MATRIX);
    add(`${prefix}.mlp.2.bias`, [S], ZEROS);
    layerNorm(`${prefix}.mlp_ln`);
  };

  add('encoder.positional_embedding', [h.nAudioCtx, S], POSITIONAL);
  add('encoder.conv1.weight', [S, h.nMels, 3], MATRIX);
  add('encoder.conv1.bias', [S, 1], ZEROS); // [S] reshaped to [S, 1], as convert-pt-to-ggml.py does
  add('encoder.conv2.weight', [S, S, 3], MATRIX);
  add('encoder.conv2.bias', [S, 1], ZEROS);
  for (let i = 0; i < h.layers; i++) block(`encoder.blocks.${i}`, false);
  layerNorm('encoder.ln_post');
  add('decoder.positional_embedding', [h.nTextCtx, S], POSITIONAL);
  add('decoder.token_embedding.weight', [h.nVocab, S], MATRIX);
  for (let i = 0; i < h.layers; i++) block(`decoder.blocks.${i}`, true);
  layerNorm('decoder.ln');
  return list;
}

/** f32 for 1-D tensors, the conv biases and both positional embeddings; f16 for the rest. */
function isF32(spec: TensorSpec): boolean {
  return spec.shape.length < 2 || spec.name.endsWith('conv1.bias') || spec.name.endsWith('conv2.bias') || spec.name.endsWith('positional_embedding');
}

/** Token i ≥ 256: a lower-case pseudo-word with a leading space, like a BPE word piece. */
function token(i: number): Uint8Array {
  if (i < 256) return Uint8Array.of(i);
  let word = '';
  for (let n = i - 256; ; n = Math.floor(n / 26) - 1) {
    word = String.fromCharCode(97 + (n % 26)) + word;
    if (n < 26) break;
  }
  return Buffer.from(` ${word}`, 'latin1');
}

/** Write a random-weight model of `shape` to `file`; returns its size in bytes. */
export function writeWhisperModel(shape: WhisperShape, file: string, seed = 1): { path: string; bytes: number } {
  if (endianness() !== 'LE') throw new Error('make-whisper-model writes little-endian typed arrays as they are');
  const h = SHAPES[shape];
  const fd = openSync(file, 'w');
  try {
    const out = new Writer(fd);
    for (const value of [GGML_MAGIC, h.nVocab, h.nAudioCtx, h.state, h.heads, h.layers, h.nTextCtx, h.state, h.heads, h.layers, h.nMels, F16]) {
      out.i32(value);
    }

    out.i32(h.nMels);
    out.i32(N_FFT / 2 + 1);
    out.raw(melFilterbank(h.nMels));

    out.i32(N_FILE_TOKENS);
    for (let i = 0; i < N_FILE_TOKENS; i++) {
      const bytes = token(i);
      out.i32(bytes.length);
      out.raw(bytes);
    }

    const normal = new Normals(seed);
    const values = new Float32Array(CHUNK_VALUES);
    const bits = new Uint32Array(values.buffer);
    const halves = new Uint16Array(CHUNK_VALUES);
    for (const spec of tensors(h)) {
      const f32 = isF32(spec);
      const name = Buffer.from(spec.name, 'utf8');
      out.i32(spec.shape.length);
      out.i32(name.length);
      out.i32(f32 ? F32 : F16);
      for (const dim of [...spec.shape].reverse()) out.i32(dim);
      out.raw(name);
      const count = spec.shape.reduce((a, b) => a * b, 1);
      const { fill } = spec;
      for (let done = 0; done < count; done += CHUNK_VALUES) {
        const n = Math.min(CHUNK_VALUES, count - done);
        if (fill.kind === 'normal') normal.fill(values, n, fill.scale);
        else values.fill(fill.kind === 'ones' ? 1 : 0, 0, n);
        if (f32) {
          out.raw(values.subarray(0, n));
        } else {
          for (let i = 0; i < n; i++) halves[i] = halfBits(bits[i] ?? 0);
          out.raw(halves.subarray(0, n));
        }
      }
    }
    out.flush();
    return { path: file, bytes: out.bytes };
  } finally {
    closeSync(fd);
  }
}

function main(): void {
  const { values } = parseArgs({
    options: { shape: { type: 'string' }, out: { type: 'string' }, seed: { type: 'string', default: '1' } },
  });
  const shape = values.shape as WhisperShape | undefined;
  const seed = Number(values.seed);
  if (!shape || !WHISPER_SHAPES.includes(shape) || !values.out || !Number.isInteger(seed)) {
    console.error(`usage: make-whisper-model.ts --shape ${WHISPER_SHAPES.join('|')} --out FILE [--seed N]`);
    process.exit(2);
  }
  const started = performance.now();
  const { bytes } = writeWhisperModel(shape, values.out, seed);
  console.log(`${values.out}: ${shape}, seed ${seed}, ${(bytes / 1e6).toFixed(1)} MB in ${Math.round(performance.now() - started)} ms`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) main();
