/**
 * How fast a Wyoming peer may send audio: a token bucket in seconds of audio, so a peer
 * streaming faster than real time cannot take the CPU from everyone else (a wake-word run over
 * 39,526 s of audio in 15 s took 0.57 of a core). The allowance grows at `pace` seconds of audio
 * a second, up to `burstS`: a peer quiet for an hour has not saved up an hour of it. Rooms drop a
 * satellite that overdraws it; the Wyoming server reads more slowly instead.
 */

/** Audio may come this much faster than real time: jitter, and a sender's clock a little fast. */
export const AUDIO_PACE = 1.5;
/** Seconds of audio that may come at once: a stall's backlog, or the audio a sender kept from before the request. */
export const AUDIO_BURST_S = 10;

export class AudioPace {
  #creditS: number;
  #atMs: number;

  /** `pace`: seconds of audio a second; `burstS`: the most taken at once (s of audio). */
  constructor(
    readonly pace = AUDIO_PACE,
    readonly burstS = AUDIO_BURST_S,
    nowMs = performance.now(),
  ) {
    this.#creditS = burstS;
    this.#atMs = nowMs;
  }

  /** Take `seconds` of audio arriving at `nowMs`: how long (ms) until the allowance covers it; 0 when it does now. */
  take(seconds: number, nowMs = performance.now()): number {
    this.#creditS = Math.min(this.burstS, this.#creditS + ((nowMs - this.#atMs) / 1000) * this.pace) - seconds;
    this.#atMs = nowMs;
    return this.#creditS >= 0 ? 0 : (-this.#creditS / this.pace) * 1000;
  }
}
