/**
 * How fast a Wyoming peer may send audio: a token bucket in seconds of audio, so a peer
 * streaming faster than real time cannot take the CPU from everyone else (a wake-word run over
 * 39,526 s of audio in 15 s took 0.57 of a core). The allowance grows at `pace` seconds of audio
 * a second, up to `burstS`: a peer quiet for an hour has not saved up an hour of it. Rooms drop a
 * satellite that overdraws it; the Wyoming server reads more slowly instead.
 */
import { TokenBucket } from '../rate.js';

/** Audio may come this much faster than real time: jitter, and a sender's clock a little fast. */
export const AUDIO_PACE = 1.5;
/** Seconds of audio that may come at once: a stall's backlog, or the audio a sender kept from before the request. */
export const AUDIO_BURST_S = 10;

/** The token bucket (rate.ts) in seconds of audio. */
export class AudioPace extends TokenBucket {
  /** `pace`: seconds of audio a second; `burstS`: the most taken at once (s of audio). */
  constructor(pace = AUDIO_PACE, burstS = AUDIO_BURST_S, nowMs = performance.now()) {
    super({ perS: pace, burst: burstS }, nowMs);
  }
}
