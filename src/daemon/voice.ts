/**
 * The voice half of the composition root: a stream's pipeline parts from the engines (wake
 * word, VAD, speech to text, speech out) for the daemon and for `iris listen` alike, and runs
 * the daemon's microphone loop — a missing or vanished microphone is logged and retried with
 * backoff while text, timers and tools keep working.
 */
import type { Config } from '../config/schema.js';
import { messageOf } from '../errors.js';
import type { Logger } from '../log.js';
import { supervise } from '../supervise.js';
import type { AudioSink, AudioSource } from '../pipeline/audio.js';
import { arecordSource } from '../pipeline/capture.js';
import { EchoReference, YOUNG_CANCELLER_S } from '../pipeline/echo.js';
import { TAKE_BACK_NEAR_DB } from '../pipeline/early.js';
import { Speaker, earcon } from '../pipeline/playback.js';
import { PlayerStream } from '../pipeline/player.js';
import { createFrontEnd, type FrontEnd } from './room-ear.js';
import { roomEchoFile } from '../pipeline/echo-memory.js';
import { prefixState } from '../intents/prefix.js';
import { Engines } from '../pipeline/engines.js';
import type { SpeechToText } from '../pipeline/stt.js';
import type { TextToSpeech } from '../pipeline/tts.js';
import type { VoiceActivity } from '../pipeline/vad.js';
import { VoiceLoop, type Responder, type VoiceLoopOptions } from '../pipeline/voice.js';
import { dataOf, type VoiceEventType } from '../pipeline/events.js';
import { OwnVoiceVeto, type WakeWordDetector } from '../pipeline/wakeword.js';
import type { AudioChunk } from '../pipeline/audio.js';
import { Announcer } from './announcer.js';
import type { Announcement } from '../toolhost/api.js';

export interface VoiceParts {
  /** None for a stream whose wake word is heard elsewhere (a satellite's). */
  wake?: WakeWordDetector;
  vad: VoiceActivity;
  stt: SpeechToText;
  tts: TextToSpeech;
  /** Why this speech-to-text engine, for logs and doctor. */
  sttReason: string;
  /** The speech to text's start (a whisper-server loading its model). */
  sttStarted: Promise<void>;
}

/** A stream's parts, from the engines: its own wake-word detector (none when `wake` is false) and VAD, the shared recogniser and voice. */
export async function createVoiceParts(engines: Engines, wake = true): Promise<VoiceParts> {
  const [detector, vad] = await Promise.all([wake ? engines.wake() : undefined, engines.vad()]);
  const { engine: stt, reason, started } = engines.stt();
  return { ...(detector ? { wake: detector } : {}), vad, stt, tts: engines.tts(), sttReason: reason, sttStarted: started };
}

/** The loop's settings from the config; `parts` without a wake word for a loop that is only triggered. */
export function loopOptions<R>(config: Config, parts: VoiceParts, sink: AudioSink, respond: Responder<R>): VoiceLoopOptions<R> {
  const { sttReason: _reason, sttStarted: _started, ...engines } = parts;
  return {
    ...engines,
    sink,
    respond,
    endpoint: { silenceS: config.audio.silence_s, maxS: config.audio.max_command_s, noSpeechS: config.audio.no_speech_s },
    followUpS: config.assistant.follow_up_s,
    minConfidence: config.stt.min_confidence,
    clarifyFrom: config.stt.clarify_confidence,
    overSpeechMinConfidence: config.stt.over_speech_confidence,
    commandState: prefixState,
    completePauseS: config.audio.complete_pause_s,
    incompletePauseS: config.audio.incomplete_pause_s,
    ...(config.audio.earcon ? { earcon: earcon() } : {}),
  };
}

/**
 * The loop's `ownVoice` over a front end (room-ear.ts): the wake word also run on what IRIS
 * played, by a second detector — its own state on the shared model sessions — so IRIS saying
 * "hey jarvis" does not wake it. None for a stream without a wake word.
 */
export async function ownVoiceOf(engines: Engines, parts: VoiceParts, ear: () => FrontEnd | undefined): Promise<{ ownVoice?: { veto: OwnVoiceVeto; audio: (chunk: AudioChunk) => Int16Array | undefined } }> {
  if (!parts.wake) return {};
  return { ownVoice: { veto: new OwnVoiceVeto(await engines.wake(true)), audio: (chunk) => ear()?.ownVoice(chunk) } };
}

export interface VoiceServiceOptions<R> {
  config: () => Config;
  log: Logger;
  /** Where the engines come from (the daemon shares one with rooms and Wyoming); default: its own. */
  engines?: Engines;
  respond: Responder<R>;
  /** Whether these words may be answered before the person has surely finished (the conversation's `answersEarly`); none: never. */
  answersEarly?: (text: string) => Promise<boolean>;
  /** Called when the wake word fires: warm the model. */
  onWake?: () => void;
  /** Default: arecord on `[audio] input`. */
  source?: AudioSource;
  /** Default: aplay on `[audio] output`. */
  sink?: AudioSink;
  /** First retry delay after the microphone fails (ms); doubles up to a minute. */
  retryMs?: number;
  /** Where the echo canceller keeps what it learned of the room (`echo-room.json`); none: it starts fresh at each start. */
  stateDir?: string;
}

export interface VoiceStatus {
  state: 'off' | 'starting' | 'listening' | 'no_microphone' | 'failed';
  detail: string;
  stt?: string;
  wake_word?: string;
  /** The echo canceller in use (or why none) and the delay it measured between speaker and microphone (ms). */
  echo?: { canceller: string; delay_ms?: number };
  /** Read-only answers started at a short pause (`[audio] early_answer`, with the canceller on), and of those taken back because the person went on. */
  early_answers?: { on: boolean; started: number; taken_back: number };
  /** Heard while IRIS's speaker played: wake words that stopped it, "stop"s, and its own wake words ignored. */
  over_iris?: OverIrisCounts;
}

export interface OverIrisCounts {
  barge_ins: number;
  stop_words: number;
  own_wakes_ignored: number;
}

/** The loop's events counted in `over_iris` ("stop" is counted where the front end hears it: it also stops announcements, outside any turn). */
const OVER_IRIS_EVENTS: Partial<Record<VoiceEventType, keyof OverIrisCounts>> = { 'barge-in': 'barge_ins', 'own-wake': 'own_wakes_ignored' };

const MAX_RETRY_MS = 60_000;
/** How far back IRIS's audio makes a wake word "over speech" (clock samples): the loop's pre-roll, 2.5 s. */
const OVER_SPEECH_WINDOW = 2.5 * 16_000;

/**
 * The loop's `overSpeech` for the daemon's speaker: something plays, or played within the
 * recogniser's pre-roll. A wake word heard then was spoken over IRIS's own voice, and the
 * recogniser must not adapt to that audio (pipeline/voice.ts).
 */
export function overSpeechOf(speaker: Speaker, clock: () => number = () => EchoReference.nowSamples()): () => boolean {
  return () => {
    const now = clock();
    return speaker.playing || speaker.reference.sounding(now - OVER_SPEECH_WINDOW, now);
  };
}

/** The daemon's voice: the microphone loop plus spoken announcements. */
export class VoiceService<R> {
  readonly #o: VoiceServiceOptions<R>;
  readonly #log: Logger;
  readonly #engines: Engines;
  #controller = new AbortController();
  #running: Promise<void> | undefined;
  #parts: VoiceParts | undefined;
  #loop: VoiceLoop<R> | undefined;
  #announcer: Announcer | undefined;
  #ear: FrontEnd | undefined;
  #speaker: Speaker | undefined;
  /** Early answers may start: `[audio] early_answer`, and IRIS's own voice is cancelled from the microphone. */
  #answerEarly = false;
  #status: VoiceStatus = { state: 'off', detail: 'not started' };
  readonly #overIris: OverIrisCounts = { barge_ins: 0, stop_words: 0, own_wakes_ignored: 0 };

  constructor(options: VoiceServiceOptions<R>) {
    this.#o = options;
    this.#log = options.log;
    this.#engines = options.engines ?? new Engines(options.config, options.log);
  }

  get status(): VoiceStatus {
    const room = this.#ear?.stats();
    if (!room) return this.#status;
    const early = this.#loop?.earlyAnswers ?? { started: 0, takenBack: 0 };
    return {
      ...this.#status,
      echo: { canceller: room.canceller, ...(room.delayMs === undefined ? {} : { delay_ms: Math.round(room.delayMs) }) },
      early_answers: { on: this.#answerEarly, started: early.started, taken_back: early.takenBack },
      over_iris: { ...this.#overIris },
    };
  }

  /** Load the models and start listening in the background; never throws. */
  async start(): Promise<void> {
    const started = this.#controller.signal; // a restart() meanwhile makes a new one
    const config = this.#o.config();
    // The one way out to the speaker: replies, the earcon and announcements all play through
    // it, and what it played is the echo canceller's reference.
    const sink = new Speaker(this.#o.sink ?? new PlayerStream({ device: config.audio.output, idleS: config.audio.speaker_idle_s, log: this.#log.child('speaker') }));
    this.#speaker = sink;
    this.#status = { state: 'starting', detail: 'loading models' };
    let ownVoice: Awaited<ReturnType<typeof ownVoiceOf>> = {};
    try {
      this.#parts = await createVoiceParts(this.#engines);
      ownVoice = await ownVoiceOf(this.#engines, this.#parts, () => this.#ear);
    } catch (error) {
      this.#status = { state: 'failed', detail: messageOf(error) };
      this.#log.error(`voice off: ${messageOf(error)}`);
      this.#announcer = new Announcer({ sink, tts: this.#engines.tts(), isIdle: () => true, config: this.#o.config, log: this.#log.child('announce') });
      return;
    }
    const parts = this.#parts;
    this.#log.info(`speech to text: ${parts.sttReason}`);
    await parts.sttStarted.catch((error: unknown) => this.#log.error(`speech to text: ${messageOf(error)}`));
    const answersEarly = this.#o.answersEarly;
    const loop = new VoiceLoop<R>({
      ...loopOptions(config, parts, sink, this.#o.respond),
      overSpeech: overSpeechOf(sink),
      echoDistorted: () => this.#ear?.stats().clipping ?? false,
      echoYoung: () => (this.#ear?.stats().ageS ?? Infinity) < YOUNG_CANCELLER_S,
      ...ownVoice,
      ...(this.#o.onWake ? { onWake: this.#o.onWake } : {}),
      ...(answersEarly && config.audio.early_answer ? {
        earlyAnswer: async (text: string) => this.#answerEarly && (await answersEarly(text)),
        takeBackS: config.audio.take_back_s,
        // The answer's own echo, what the canceller leaves of it, does not take it back: only speech above it (IRIS's own audio from the front end).
        echoResidual: { audio: (chunk: AudioChunk) => this.#ear?.ownVoice(chunk), minNearDb: TAKE_BACK_NEAR_DB },
      } : {}),
      onEvent: (event) => {
        const counted = OVER_IRIS_EVENTS[event.type];
        if (counted) this.#overIris[counted] += 1;
        if (event.type === 'wake-end') {
          this.#announcer?.acknowledge();
          sink.warm(); // the chime or the reply follows: the speaker stream starts meanwhile
        }
        if (event.type === 'own-wake') this.#log.info(`IRIS's own wake word ignored at ${(dataOf(event, 'own-wake').atS ?? 0).toFixed(2)} s`);
        if (event.type === 'answer-taken-back') {
          const { nearDb } = dataOf(event, 'answer-taken-back');
          this.#log.info(`turn ${event.run}: early answer taken back, the person went on${nearDb === undefined ? '' : ` (${nearDb} dB above its echo's residual)`}`);
        }
        if (event.type === 'answer-echo') this.#log.debug(`turn ${event.run}: the early answer's own echo not taken for the person (${dataOf(event, 'answer-echo').nearDb ?? '?'} dB)`);
      },
      onRun: (run, line) => {
        if (run.outcome === 'no_speech' && run.followUp) this.#log.debug(line);
        else this.#log.info(line);
      },
    });
    this.#loop = loop;
    this.#announcer = new Announcer({ sink, tts: parts.tts, isIdle: () => loop.idle, config: this.#o.config, log: this.#log.child('announce') });
    const input = config.audio.input;
    if (!this.#o.source && input === '') {
      this.#status = { state: 'off', detail: 'no microphone configured ([audio] input is empty)' };
      this.#log.info('voice input off: [audio] input is empty');
      return;
    }
    const microphone = this.#o.source ?? arecordSource({ device: input });
    const ear = await createFrontEnd(config, this.#log, {
      source: microphone,
      speaker: sink,
      ...(this.#o.stateDir === undefined ? {} : { echoRoom: roomEchoFile(this.#o.stateDir, this.#log) }),
      // The stop word's level route is turned down where the wake word is being said: a detector of its own (no second look: its scores alone).
      ...(parts.wake ? { wake: await this.#engines.wake(true) } : {}),
      onStop: (atS) => {
        // "stop" while IRIS plays: the sound stops at once, a reply ends, a ringing timer is heard.
        this.#overIris.stop_words += 1;
        sink.stop();
        loop.hush(atS);
        this.#announcer?.acknowledge();
      },
    });
    if (started.aborted) {
      await ear.stop(); // stopped while it was being made: stop() has already looked for it
      return;
    }
    this.#ear = ear;
    // Without the canceller IRIS hears its own answer, which would take every early one back.
    this.#answerEarly = config.audio.early_answer && ear.stats().cancelling;
    this.#running = this.#listen(loop, ear.source);
  }

  /** Say a due timer or reminder (repeated until the wake word acknowledges it). */
  announce(announcement: Announcement): void {
    if (this.#announcer) this.#announcer.announce(announcement);
    else this.#log.child('announce').info(`${announcement.kind} #${announcement.id}: ${announcement.text}`); // not started yet
  }

  async stop(): Promise<Announcement[]> {
    this.#controller.abort(new DOMException('stopping', 'AbortError'));
    const unsaid = this.#announcer?.stop() ?? [];
    await this.#running;
    await this.#ear?.stop();
    this.#ear = undefined;
    await this.#speaker?.close();
    this.#speaker = undefined;
    if (this.#o.engines === undefined) await this.#engines.stop(); // shared engines are their owner's to stop
    return unsaid;
  }

  /**
   * Rebuild everything from the config in force (a reload changed a voice setting): the
   * microphone loop, the models, the voices. A turn in progress ends; announcements still to
   * be said are said by the new voice.
   */
  async restart(): Promise<void> {
    const unsaid = await this.stop();
    this.#controller = new AbortController();
    this.#running = undefined;
    this.#loop = undefined;
    this.#parts = undefined;
    this.#announcer = undefined;
    await this.start();
    for (const announcement of unsaid) this.announce(announcement);
  }

  async #listen(loop: VoiceLoop<R>, source: AudioSource): Promise<void> {
    const device = this.#o.config().audio.input;
    await supervise(async (signal) => {
      this.#status = { state: 'listening', detail: `microphone ${device}`, stt: this.#parts?.stt.name ?? '', wake_word: this.#parts?.wake?.word ?? '' };
      await loop.run(source, signal);
      throw new Error('the microphone stream ended');
    }, {
      signal: this.#controller.signal,
      firstMs: this.#o.retryMs ?? 2_000,
      maxMs: MAX_RETRY_MS, // and a microphone working this long starts the backoff over
      onExit: (error, retryMs) => {
        this.#status = { state: 'no_microphone', detail: messageOf(error) };
        this.#log.warn(`no microphone: ${messageOf(error)}; retrying in ${Math.round(retryMs / 1000)} s`);
      },
    });
  }
}
