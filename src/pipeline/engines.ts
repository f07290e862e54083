/**
 * The one place the pipeline's engines are chosen, per stage, from the config in force: the
 * wake word (openWakeWord), voice activity (Silero), speech to text (whisper.cpp when its model
 * and server are there, else pocketsphinx with the command grammar) and the voice (tts.ts).
 * Every run of the pipeline takes its engines here — the microphone, each room, each Wyoming
 * request, `iris say`, `iris listen`, announcements — so they share one of each: a stream's own
 * state (a wake-word detector's audio, a VAD's) is made per stream on shared model sessions;
 * speech to text and the voice are made once and remade when their settings change.
 */
import { existsSync, statSync } from 'node:fs';
import type { Config } from '../config/schema.js';
import { messageOf } from '../errors.js';
import { sameMeaning } from '../intents/match.js';
import { RIVALS } from '../intents/sentences.js';
import type { Logger } from '../log.js';
import { createPocketsphinx } from './pocketsphinx.js';
import { pooledStt, type SpeechToText } from './stt.js';
import { createTextToSpeech, type TextToSpeech } from './tts.js';
import { createSileroVad, type VoiceActivity } from './vad.js';
import { createOpenWakeWord, OWN_VOICE_THRESHOLD, wakeWordName, type WakeWordDetector } from './wakeword.js';
import { WAKE_CHECK } from './wake-check.js';
import { checkModel, createWhisper, findWhisperServer } from './whisper.js';

/** The shared speech to text: the engine, why it was chosen, and its start (a failed one is tried again by the next caller). */
export interface ChosenStt {
  engine: SpeechToText;
  reason: string;
  started: Promise<void>;
}

/** whisper.cpp when its model and server are there, else pocketsphinx with the command grammar. */
export function chooseStt(config: Config, log: Logger): { stt: SpeechToText; reason: string } {
  const wake = wakeWordName(config.assistant.wake_word).replace(/_/g, ' ');
  const fallback = (why: string) => ({
    // Decodes agree when they ask for the same thing, not only in the same words.
    stt: createPocketsphinx({ wakePhrases: [wake, wake.split(' ').pop() ?? wake], agree: sameMeaning, rivals: RIVALS }),
    reason: why,
  });
  if (config.stt.engine === 'pocketsphinx') return fallback('pocketsphinx, as configured');
  const model = config.stt.model;
  if (!existsSync(model) || statSync(model).size === 0) {
    return fallback(`pocketsphinx with a command grammar: no whisper model at ${model} (get one: iris models fetch base.en)`);
  }
  try {
    checkModel(model); // a truncated or foreign file falls back instead of failing at start
  } catch (error) {
    return fallback(`pocketsphinx with a command grammar: ${messageOf(error)}`);
  }
  const server = findWhisperServer();
  if (!server) return fallback('pocketsphinx with a command grammar: whisper-server is not installed');
  return {
    stt: createWhisper({ model, threads: config.stt.threads, audioCtx: config.stt.audio_ctx, command: server, log: log.child('whisper') }),
    reason: `whisper.cpp (${model})`,
  };
}

/**
 * Commands decoded at once by pocketsphinx before one more waits for a decoder: before they
 * shared one pool, the microphone, the rooms and Wyoming had 1 + 4 + 1. Each costs ~50 MB
 * while it exists, and exists only once that many commands overlapped.
 */
const POOL_MAX = 6;

export class Engines {
  readonly #config: () => Config;
  readonly #log: Logger;
  #stt: (ChosenStt & { key: string }) | undefined;
  /** Every recogniser made, also those replaced or whose start failed: a run may still hold one, and it may have started a helper (whisper-server). */
  readonly #made = new Map<SpeechToText, Promise<void>>();
  #tts: { key: string; engine: TextToSpeech } | undefined;

  constructor(config: () => Config, log: Logger) {
    this.#config = config;
    this.#log = log;
  }

  /**
   * The wake stage: a detector of its own for one stream, on the shared model sessions. `own`:
   * one whose scores judge something else, with no second look (wake-check.ts) and at
   * `OWN_VOICE_THRESHOLD` at most: the own-voice veto's on IRIS's own audio, and the stop word's
   * level route's on the cancelled microphone (frontend.ts `wake`).
   */
  wake(own = false): Promise<WakeWordDetector> {
    const { wake_word: model, wake_threshold: threshold, wake_check_from: fromScore } = this.#config().assistant;
    if (own) return createOpenWakeWord({ model, threshold: Math.min(threshold, OWN_VOICE_THRESHOLD), check: false });
    return createOpenWakeWord({ model, threshold, check: fromScore > 0 ? { ...WAKE_CHECK, fromScore } : false });
  }

  /** Where speech starts and ends, for one stream. */
  vad(): Promise<VoiceActivity> {
    return createSileroVad();
  }

  /**
   * The speech-to-text stage, shared by every run. pocketsphinx decodes one utterance at a
   * time, so it is a pool (more decoders only while commands overlap); whisper.cpp is one
   * server loaded once. Remade when `[stt]` or the wake word changes.
   */
  stt(): ChosenStt {
    const config = this.#config();
    const key = JSON.stringify([config.stt, config.assistant.wake_word]);
    if (this.#stt?.key === key) return this.#stt;
    if (this.#stt !== undefined) this.#retire(this.#stt);
    const { engine, reason } = this.#makeStt(config);
    const chosen = { key, engine, reason, started: engine.start?.() ?? Promise.resolve() };
    this.#made.set(engine, chosen.started);
    chosen.started.catch(() => {
      // The next caller tries again; this one is stopped now, not kept until `stop()`.
      if (this.#stt === chosen) this.#stt = undefined;
      this.#retire(chosen);
    });
    this.#stt = chosen;
    return chosen;
  }

  /**
   * A recogniser for `config`. Its own scope on purpose: a closure made in `stt()` (the pool's
   * `create`) kept that call's whole scope, with the engine it replaced, and so every
   * recogniser ever made stayed reachable, one reload after another.
   */
  #makeStt(config: Config): { engine: SpeechToText; reason: string } {
    const log = this.#log;
    const { stt, reason } = chooseStt(config, log);
    // Decoders for the commands in flight at once, across the microphone, rooms and Wyoming.
    return { engine: stt.name === 'pocketsphinx' ? pooledStt(() => chooseStt(config, log).stt, POOL_MAX) : stt, reason };
  }

  /** Stop a replaced (or failed) recogniser once it has started; `stop()` no longer holds it. */
  #retire(old: ChosenStt): void {
    if (!this.#made.delete(old.engine)) return;
    void old.started.then(() => old.engine.stop?.(), () => old.engine.stop?.()).catch(() => undefined);
  }

  /** The speech stage's voice, shared (a Piper voice loads its model once); remade when `[tts]` changes. */
  tts(): TextToSpeech {
    const config = this.#config();
    const key = JSON.stringify([config.tts, config.stt.model]);
    if (this.#tts?.key !== key) this.#tts = { key, engine: createTextToSpeech(config, this.#log) };
    return this.#tts.engine;
  }

  /** Stop what the engines started (a whisper-server, the decoders). */
  async stop(): Promise<void> {
    this.#stt = undefined;
    this.#tts = undefined;
    const made = [...this.#made];
    this.#made.clear();
    await Promise.all(made.map(([engine, started]) => started.catch(() => undefined).then(() => engine.stop?.()).catch(() => undefined)));
  }
}
