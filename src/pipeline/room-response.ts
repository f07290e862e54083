/**
 * The room's echo as one fixed filter: what IRIS played against what the microphone heard, solved
 * by least squares. speexdsp adapts towards the same answer, but slowly (~7 dB of the echo in its
 * first 2 s, ~30 after a minute), and the taps it can be read out as describe the room to ~12 dB
 * only; the least-squares response over IRIS's first reply takes 29–31 dB of the next one at once,
 * as much as the room's true response (docs/room.md, "The room's response by least squares",
 * session 22). So the room is remembered as this response, and after a start it is taken off the
 * microphone before the adaptive filter, which then learns only what is left.
 *
 * Both work in blocks through FFTs (fft.js): the correlations cost ~5 ms per second of IRIS, the
 * filter ~5 ms per second it runs; the solve ~0.3 s each time the room is kept (room-ear.ts: after
 * 20 s of IRIS, then each minute with 10 s more, and at a voice stop).
 */
import FFT from 'fft.js';

const clamp16 = (v: number): number => Math.max(-32768, Math.min(32767, Math.round(v)));

/** The least power of two at least `n`. */
const power2 = (n: number): number => 2 ** Math.ceil(Math.log2(n));

/**
 * Tikhonov's load on the reference's autocorrelation (a share of its energy): chosen on dev rooms,
 * 0.001 (29–31 dB) against 0.01 (25–27 dB). Speech leaves bands unexcited; the load keeps the
 * response there small instead of fitting noise, and a larger one pulls it down where speech is.
 */
export const RESPONSE_LOAD = 0.001;
/** Seconds of IRIS after which what was heard before weighs half (the room may change: a door, a speaker moved). */
const HALF_LIFE_S = 120;

/**
 * The running correlations a least-squares response is solved from: the reference's
 * autocorrelation and the microphone against the reference, lags 0 … taps − 1. Fed the frames the
 * canceller filters (the microphone as heard, the reference aligned as the filter is given it),
 * `pause()` where IRIS fell silent.
 */
export class ResponseEstimate {
  readonly #taps: number;
  readonly #block: number;
  readonly #fft: FFT;
  readonly #xx: Float64Array;
  readonly #xy: Float64Array;
  /** The block being filled: the reference with the filter's length of history before it, and the microphone. */
  readonly #ref: Float64Array;
  readonly #mic: Float64Array;
  #fill = 0;
  #heard = 0;
  readonly #keep: number;
  readonly #rate: number;

  constructor(taps: number, rate: number) {
    this.#taps = taps;
    const size = power2(taps * 2.5);
    this.#block = size - taps;
    this.#fft = new FFT(size);
    this.#xx = new Float64Array(taps);
    this.#xy = new Float64Array(taps);
    this.#ref = new Float64Array(size);
    this.#mic = new Float64Array(size);
    this.#rate = rate;
    this.#keep = 0.5 ** (this.#block / (rate * HALF_LIFE_S));
  }

  /** Seconds of IRIS heard (all of it, not weighed by age). */
  get heardS(): number {
    return this.#heard / this.#rate;
  }

  add(mic: Int16Array, ref: Int16Array): void {
    for (let i = 0; i < mic.length; i++) {
      this.#ref[this.#taps + this.#fill] = ref[i] ?? 0;
      this.#mic[this.#taps + this.#fill] = mic[i] ?? 0;
      if (++this.#fill === this.#block) this.#flush();
    }
    this.#heard += mic.length;
  }

  /** IRIS fell silent (the filter's tail has passed): what is filled is counted, and the next block starts from silence. */
  pause(): void {
    if (this.#fill > 0) this.#flush();
    this.#ref.fill(0, 0, this.#taps);
  }

  /**
   * The response (`taps` long) that best predicts the microphone from the reference; undefined
   * before anything was heard. What was heard is read at the call; the solve (~0.3 s of CPU) yields
   * to the event loop every `LEVINSON_ROWS` rows, so the audio path goes on meanwhile.
   */
  async solve(load = RESPONSE_LOAD): Promise<Float32Array | undefined> {
    const steps = this.solveSteps(load);
    let step = steps.next();
    while (!step.done) {
      await new Promise((resolve) => setImmediate(resolve));
      step = steps.next();
    }
    return step.value;
  }

  /** `solve` as steps of `rows` rows each, for a caller on the audio path to take one per frame. */
  *solveSteps(load = RESPONSE_LOAD, rows = LEVINSON_ROWS): Generator<void, Float32Array | undefined> {
    if (this.#fill > 0) this.#flush();
    const r = Float64Array.from(this.#xx);
    if (!((r[0] ?? 0) > 0)) return undefined;
    r[0] = (r[0] ?? 0) * (1 + load);
    return yield* levinson(r, Float64Array.from(this.#xy), rows);
  }

  /** The block's correlations added in (the reference's history, then the block; what is past the fill is silence). */
  #flush(): void {
    const n = this.#fft.size;
    const taps = this.#taps;
    const end = taps + this.#fill;
    this.#ref.fill(0, end);
    this.#mic.fill(0, end);
    const spectrum = (signal: Float64Array) => {
      const out = this.#fft.createComplexArray() as number[];
      this.#fft.realTransform(out, signal); // bins 0 … n/2: a real signal's upper half mirrors them
      return out;
    };
    const history = spectrum(this.#ref);
    const mic = spectrum(this.#mic);
    const block = this.#ref.slice();
    block.fill(0, 0, taps);
    const ref = spectrum(block);
    // Both products at once: the microphone's correlation as the real part, the reference's as the
    // imaginary (each product's upper half is its lower half's conjugate).
    const product = new Float64Array(2 * n);
    for (let k = 0; k <= n; k += 2) {
      const ar = history[k] as number;
      const ai = -(history[k + 1] as number);
      const mr = mic[k] as number;
      const mi = mic[k + 1] as number;
      const xr = ref[k] as number;
      const xi = ref[k + 1] as number;
      const [cr, ci, dr, di] = [mr * ar - mi * ai, mr * ai + mi * ar, xr * ar - xi * ai, xr * ai + xi * ar];
      product[k] = cr - di;
      product[k + 1] = ci + dr;
      if (k > 0 && k < n) {
        product[2 * n - k] = cr + di;
        product[2 * n - k + 1] = dr - ci;
      }
    }
    const lags = this.#fft.createComplexArray() as number[];
    this.#fft.inverseTransform(lags, product);
    const keep = this.#keep;
    for (let l = 0; l < taps; l++) {
      this.#xy[l] = (this.#xy[l] as number) * keep + (lags[2 * l] as number);
      this.#xx[l] = (this.#xx[l] as number) * keep + (lags[2 * l + 1] as number);
    }
    // The block's last `taps` samples of the reference are the next one's history.
    this.#ref.copyWithin(0, end - taps, end);
    this.#fill = 0;
  }
}

/** Rows of `levinson` between its yields: ~20 ms of work at the filter's end (the rows grow). */
const LEVINSON_ROWS = 256;

/**
 * `T x = y` for the symmetric Toeplitz `T` whose first row is `r` (Levinson's recursion, O(n²));
 * undefined where it breaks down (`T` not positive definite). Yields every `rows` rows.
 */
export function* levinson(r: Float64Array, y: Float64Array, rows = LEVINSON_ROWS): Generator<void, Float32Array | undefined> {
  const n = r.length;
  const r0 = r[0] ?? 0;
  let forward = new Float64Array(n);
  let next = new Float64Array(n);
  const x = new Float64Array(n);
  forward[0] = 1 / r0;
  x[0] = (y[0] ?? 0) / r0;
  for (let m = 1; m < n; m++) {
    if (m % rows === 0) yield;
    let ef = 0;
    let ex = 0;
    for (let i = 0; i < m; i++) {
      const rm = r[m - i] as number;
      ef += rm * (forward[i] as number);
      ex += rm * (x[i] as number);
    }
    const denominator = 1 - ef * ef;
    if (!(Math.abs(denominator) > 1e-12)) return undefined;
    // The backward vector is the forward one reversed (the matrix is symmetric).
    next[0] = (forward[0] as number) / denominator;
    for (let i = 1; i < m; i++) next[i] = ((forward[i] as number) - ef * (forward[m - i] as number)) / denominator;
    next[m] = (-ef * (forward[0] as number)) / denominator;
    [forward, next] = [next, forward];
    const k = (y[m] as number) - ex;
    for (let i = 0; i <= m; i++) x[i] = (x[i] as number) + k * (forward[m - i] as number);
  }
  const taps = Float32Array.from(x);
  return taps.every(Number.isFinite) ? taps : undefined;
}

/**
 * A fixed response applied frame by frame (uniformly partitioned overlap-save): the echo the
 * remembered room predicts for each frame of the reference. `clear()` where IRIS fell silent.
 */
export class RoomFilter {
  readonly #frame: number;
  readonly #fft: FFT;
  /** The response's partitions' spectra, and the reference's last spectra, newest first. */
  readonly #parts: number[][];
  readonly #history: number[][];
  readonly #input: Float64Array;
  readonly #sum: Float64Array;
  /** The inverse transform's output, reused frame to frame. */
  readonly #echo: number[];
  #newest = 0;

  constructor(readonly taps: Float32Array, frame: number) {
    this.#frame = frame;
    this.#fft = new FFT(2 * frame);
    const count = Math.ceil(taps.length / frame);
    this.#parts = Array.from({ length: count }, (_, k) => {
      const part = new Float64Array(2 * frame);
      part.set(taps.subarray(k * frame, (k + 1) * frame));
      return this.#spectrum(part);
    });
    this.#history = Array.from({ length: count }, () => this.#fft.createComplexArray() as number[]);
    this.#input = new Float64Array(2 * frame);
    this.#sum = new Float64Array(4 * frame);
    this.#echo = this.#fft.createComplexArray() as number[];
  }

  /** `mic` less the echo the response predicts from this frame of the reference (`frame` samples each). */
  cancel(mic: Int16Array, ref: Int16Array): Int16Array {
    const frame = this.#frame;
    this.#input.copyWithin(0, frame);
    for (let i = 0; i < frame; i++) this.#input[frame + i] = ref[i] ?? 0;
    this.#newest = (this.#newest + this.#history.length - 1) % this.#history.length;
    this.#fft.realTransform(this.#history[this.#newest], this.#input); // bins 0 … frame: all `cancel` reads
    const sum = this.#sum.fill(0);
    const count = this.#parts.length;
    for (let k = 0; k < count; k++) {
      const x = this.#history[(this.#newest + k) % count] as number[];
      const h = this.#parts[k] as number[];
      for (let b = 0; b <= 2 * frame; b += 2) {
        const xr = x[b] as number;
        const xi = x[b + 1] as number;
        const hr = h[b] as number;
        const hi = h[b + 1] as number;
        sum[b] = (sum[b] as number) + xr * hr - xi * hi;
        sum[b + 1] = (sum[b + 1] as number) + xr * hi + xi * hr;
      }
    }
    // A real signal's spectrum: the upper half mirrors the lower.
    for (let b = frame + 1; b < 2 * frame; b++) {
      sum[2 * b] = sum[2 * (2 * frame - b)] as number;
      sum[2 * b + 1] = -(sum[2 * (2 * frame - b) + 1] as number);
    }
    const echo = this.#echo;
    this.#fft.inverseTransform(echo, sum);
    const out = new Int16Array(frame);
    for (let i = 0; i < frame; i++) out[i] = clamp16((mic[i] as number) - (echo[2 * (frame + i)] as number));
    return out;
  }

  /** Frames of the reference the response spans: what `cancel` must have been fed before its prediction is whole. */
  get frames(): number {
    return this.#parts.length;
  }

  /** IRIS fell silent: nothing it played before sounds when it starts again. */
  clear(): void {
    this.#input.fill(0);
    for (const x of this.#history) x.fill(0);
  }

  #spectrum(signal: Float64Array): number[] {
    const out = this.#fft.createComplexArray() as number[];
    this.#fft.realTransform(out, signal);
    this.#fft.completeSpectrum(out);
    return out;
  }
}
