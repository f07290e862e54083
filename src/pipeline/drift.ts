/**
 * Two sound cards' clocks. The speaker's and the microphone's crystals are tens to a few hundred
 * ppm apart, so the echo's delay moves steadily while IRIS talks: 300 ppm is 4.8 samples a
 * second at 16 kHz. The delay tracker follows such a delay within a few ms. But an adaptive
 * filter cannot follow an impulse response that keeps moving (bench-room's drift mode: ERLE
 * 15.6 dB at 0 ppm, 10 dB at ±50, 8 dB at ±100, 4 dB at ±300). So the canceller finds the
 * drift's rate from its delay estimates (`DelayDrift`), and reads the reference at that rate
 * (`readDrifting`). The filter then sees a still room.
 */

/** Estimates this far apart (seconds) tell a drift: integer-sample estimates over less cannot tell 10 ppm from none. */
const SPAN_S = 10;
/** Estimates kept (seconds): the rate is fitted over the last this many. */
const HISTORY_S = 40;
/** Slower drift is taken as none (ppm): below what `SPAN_S` of whole-sample estimates can measure. */
const MIN_PPM = 10;
/** Faster is not two crystals (ppm): left to the tracker's steps. */
const MAX_PPM = 1000;
/** An estimate within this of the fitted line (samples) is on it: ±1 sample of rounding, and the correlation's spread. */
const ON_LINE_SAMPLES = 3;
/** The share of estimates that must lie on the line before its slope is believed. */
const ON_LINE_SHARE = 0.8;
const RATE = 16_000;

/**
 * The delay's drift from the estimates of it: a robust line (Theil–Sen: the median of the
 * pairwise slopes) through the last `HISTORY_S`. A rate is only given when most estimates lie
 * on the line: a delay that jumped (a new player, a moved anchor) or estimates made while the
 * person talked are not a drift.
 */
export class DelayDrift {
  #points: { at: number; delay: number }[] = [];

  /**
   * The delay estimated at microphone clock sample `at` (samples). Returns the drift's rate
   * (delay samples per microphone sample; 0: none), or undefined while the estimates do not tell.
   */
  add(at: number, delay: number): number | undefined {
    this.#points.push({ at, delay });
    this.#points = this.#points.filter((p) => p.at > at - HISTORY_S * RATE);
    const points = this.#points;
    const first = points[0];
    if (first === undefined || points.length < 5 || at - first.at < SPAN_S * RATE) return undefined;
    const slopes: number[] = [];
    for (let i = 0; i < points.length; i++) {
      for (let j = i + 1; j < points.length; j++) {
        const a = points[i];
        const b = points[j];
        if (a && b && b.at !== a.at) slopes.push((b.delay - a.delay) / (b.at - a.at));
      }
    }
    const slope = median(slopes);
    const intercept = median(points.map((p) => p.delay - slope * p.at));
    const onLine = points.filter((p) => Math.abs(p.delay - (intercept + slope * p.at)) <= ON_LINE_SAMPLES).length;
    if (onLine < ON_LINE_SHARE * points.length || Math.abs(slope) > MAX_PPM * 1e-6) return undefined;
    return Math.abs(slope) < MIN_PPM * 1e-6 ? 0 : slope;
  }

  /** The estimates so far no longer line up (the clock jumped, the delay stepped). */
  clear(): void {
    this.#points = [];
  }
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? (s[mid] ?? 0) : ((s[mid - 1] ?? 0) + (s[mid] ?? 0)) / 2;
}

/** Taps of the fractional-delay filter either side: 16 in all, flat to ~6 kHz at 16 kHz. */
const HALF_TAPS = 8;
/** Fractional positions tabled: the nearest one is at most 1/512 sample off (−50 dB at 4 kHz). */
const PHASES = 256;
/** `TAPS[phase * 2 * HALF_TAPS + k]`: a Blackman-windowed sinc for the sample `k - HALF_TAPS + 1` from the position's whole part. */
const TAPS = (() => {
  const taps = new Float32Array(PHASES * 2 * HALF_TAPS);
  for (let phase = 0; phase < PHASES; phase++) {
    const fraction = phase / PHASES;
    let sum = 0;
    for (let k = 0; k < 2 * HALF_TAPS; k++) {
      const x = k - HALF_TAPS + 1 - fraction; // distance from the wanted position
      const sinc = x === 0 ? 1 : Math.sin(Math.PI * x) / (Math.PI * x);
      const w = (x + HALF_TAPS) / (2 * HALF_TAPS); // 0…1 across the window
      const blackman = 0.42 - 0.5 * Math.cos(2 * Math.PI * w) + 0.08 * Math.cos(4 * Math.PI * w);
      taps[phase * 2 * HALF_TAPS + k] = sinc * blackman;
      sum += sinc * blackman;
    }
    for (let k = 0; k < 2 * HALF_TAPS; k++) taps[phase * 2 * HALF_TAPS + k] = (taps[phase * 2 * HALF_TAPS + k] ?? 0) / sum; // unity gain at DC
  }
  return taps;
})();

/**
 * `length` samples of a stream read at positions `start + i * step` (fractional), through a
 * windowed-sinc interpolator: the reference as the microphone's clock hears it when the
 * speaker's runs `1 / step` as fast. `read(from, n)` gives the stream's whole samples.
 */
export function readDrifting(read: (from: number, length: number) => Int16Array, start: number, step: number, length: number, into: Int16Array): Int16Array {
  const from = Math.floor(start) - HALF_TAPS + 1;
  const last = start + (length - 1) * step;
  const samples = read(from, Math.floor(last) + HALF_TAPS + 2 - from);
  for (let i = 0; i < length; i++) {
    const x = start + i * step;
    let base = Math.floor(x);
    let phase = Math.round((x - base) * PHASES);
    if (phase === PHASES) [base, phase] = [base + 1, 0]; // rounds up to the next whole sample
    const offset = base - HALF_TAPS + 1 - from;
    const taps = phase * 2 * HALF_TAPS;
    let sum = 0;
    for (let k = 0; k < 2 * HALF_TAPS; k++) sum += (samples[offset + k] ?? 0) * (TAPS[taps + k] ?? 0);
    into[i] = Math.max(-32768, Math.min(32767, Math.round(sum)));
  }
  return into;
}
