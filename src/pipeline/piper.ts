/**
 * Piper neural voices on onnxruntime-node (notes/piper.md): a voice is `NAME.onnx` and
 * `NAME.onnx.json`. Text → espeak-ng phonemes (phonemes.ts) → ids through the voice's
 * `phoneme_id_map` (`^`, then each phoneme and `_`, then `$`) → the model with the voice's
 * `scales` (and `sid` for a voice with several speakers) → samples normalised to 16-bit WAV
 * at the voice's rate. One session per voice, loaded once, threads bounded.
 */
import { readFile } from 'node:fs/promises';
import { IrisError } from '../errors.js';
import { concatSamples } from './audio.js';
import { encodeWav } from './wav.js';
import { phonemize } from './phonemes.js';

export class PiperError extends IrisError {
  override name = 'PiperError' as const;
}

export interface PiperOptions {
  /** The voice's `.onnx`; its `.onnx.json` sits beside it. */
  model: string;
  /** A speaker's name or number, for voices with several; default the voice's own default. */
  speaker?: string;
  /** Speed: words per minute against espeak-ng's 175 (length_scale = 175 / rate). */
  rateWpm?: number;
  /** onnxruntime threads; default 1 (the wake word and recogniser need the other core). */
  threads?: number;
}

interface VoiceConfig {
  audio: { sample_rate: number };
  espeak: { voice: string };
  phoneme_id_map: Record<string, number[]>;
  num_speakers?: number;
  speaker_id_map?: Record<string, number>;
  default_speaker_id?: number;
  inference?: { noise_scale?: number; length_scale?: number; noise_w?: number };
}

/** A voice, ready to speak: `synthesize` as the TextToSpeech seam has it. */
export async function createPiper(options: PiperOptions): Promise<{ synthesize(text: string, signal?: AbortSignal): Promise<Buffer>; rate: number }> {
  const voice = await readVoice(`${options.model}.json`);
  const ort = await import('onnxruntime-node');
  let session: Awaited<ReturnType<typeof ort.InferenceSession.create>>;
  try {
    session = await ort.InferenceSession.create(options.model, { intraOpNumThreads: options.threads ?? 1, interOpNumThreads: 1 });
  } catch (cause) {
    throw new PiperError('piper_model', `the Piper voice ${options.model} cannot be loaded: ${String(cause)}`, { cause });
  }
  const speaker = speakerId(voice, options.speaker);
  const { noise_scale = 0.667, length_scale = 1, noise_w = 0.8 } = voice.inference ?? {};
  const scales = new Float32Array([noise_scale, length_scale * (175 / (options.rateWpm ?? 175)), noise_w]);
  const map = voice.phoneme_id_map;

  return {
    rate: voice.audio.sample_rate,
    async synthesize(text, signal) {
      const parts: Int16Array[] = [];
      for (const sentence of await phonemize(text, voice.espeak.voice)) {
        if (signal?.aborted) throw signal.reason;
        const ids = phonemeIds(sentence, map);
        const feeds: Record<string, InstanceType<typeof ort.Tensor>> = {
          input: new ort.Tensor('int64', BigInt64Array.from(ids.map(BigInt)), [1, ids.length]),
          input_lengths: new ort.Tensor('int64', BigInt64Array.from([BigInt(ids.length)]), [1]),
          scales: new ort.Tensor('float32', scales, [3]),
        };
        if (session.inputNames.includes('sid')) feeds.sid = new ort.Tensor('int64', BigInt64Array.from([BigInt(speaker)]), [1]);
        const output = (await session.run(feeds)).output;
        if (output === undefined) throw new PiperError('piper_model', `${options.model} gave no "output"`);
        parts.push(toInt16(output.data as Float32Array));
      }
      if (signal?.aborted) throw signal.reason;
      return encodeWav(concatSamples(parts), { rate: voice.audio.sample_rate, width: 2, channels: 1 });
    },
  };
}

/** A sentence's ids: BOS and a pad, each phoneme and a pad, EOS; unknown phonemes are dropped, as Piper does. */
export function phonemeIds(sentence: readonly string[], map: Readonly<Record<string, number[]>>): number[] {
  const id = (symbol: string): number[] => map[symbol] ?? [];
  return [...id('^'), ...id('_'), ...sentence.flatMap((p) => { const known = id(p); return known.length > 0 ? [...known, ...id('_')] : []; }), ...id('$')];
}

async function readVoice(path: string): Promise<VoiceConfig> {
  let value: Partial<VoiceConfig>;
  try {
    value = JSON.parse(await readFile(path, 'utf8')) as Partial<VoiceConfig>;
  } catch (cause) {
    throw new PiperError('piper_config', `the Piper voice's ${path} cannot be read: ${String(cause)}`, { cause });
  }
  if (typeof value.audio?.sample_rate !== 'number' || typeof value.espeak?.voice !== 'string' || typeof value.phoneme_id_map !== 'object') {
    throw new PiperError('piper_config', `${path} is not a Piper voice config (audio.sample_rate, espeak.voice, phoneme_id_map)`);
  }
  return value as VoiceConfig;
}

function speakerId(voice: VoiceConfig, speaker: string | undefined): number {
  if (speaker === undefined || speaker === '') return voice.default_speaker_id ?? 0;
  const named = voice.speaker_id_map?.[speaker];
  const id = named ?? Number(speaker);
  if (!Number.isInteger(id) || id < 0 || id >= (voice.num_speakers ?? 1)) throw new PiperError('piper_speaker', `the voice has no speaker "${speaker}"`);
  return id;
}

/** Float samples, scaled so the loudest is full scale (Piper's normalize_audio), as 16-bit. */
function toInt16(samples: Float32Array): Int16Array {
  let peak = 0;
  for (const s of samples) peak = Math.max(peak, Math.abs(s));
  const gain = peak > 0 ? 1 / peak : 0;
  return Int16Array.from(samples, (s) => Math.round(Math.max(-1, Math.min(1, s * gain)) * 32767));
}
