/**
 * One room: a voice loop, an announcer and a conversation, fed by a satellite link
 * (satellite/link.ts) whose protocol it does not know. The loop runs over the satellite's audio
 * (a `PushedAudio`) and answers through its speaker, sentence by sentence, with the room's own
 * conversation (memory, follow-ups, confirmations) and announcer, so two rooms talk at once.
 * The pipeline starts where the satellite asks — at `wake` (IRIS hears the wake word on the
 * stream) or at `asr` (the satellite heard it) — and ends where it asks (after the words, the
 * answer, or the spoken reply). A wake word heard here is claimed with the arbiter
 * (arbiter.ts); a room that loses drops its command quietly.
 */
import { messageOf } from '../errors.js';
import type { Config, SatelliteConfig } from '../config/schema.js';
import type { Logger } from '../log.js';
import type { AudioSink } from '../pipeline/audio.js';
import { PushedAudio } from '../pipeline/capture.js';
import type { Engines } from '../pipeline/engines.js';
import { dataOf, type VoiceEvent } from '../pipeline/events.js';
import type { PipelineStage } from '../pipeline/pipeline.js';
import type { TextToSpeech } from '../pipeline/tts.js';
import { VoiceLoop, type Responder, type VoiceRun } from '../pipeline/voice.js';
import { wakeWordName } from '../pipeline/wakeword.js';
import type { LinkState, SatelliteEvents, SatelliteInfo, SatelliteLink, SatelliteMode } from '../satellite/link.js';
import type { Announcement, Notice } from '../toolhost/api.js';
import type { TurnResult } from '../conversation/types.js';
import { describeEvidence, MAX_VERDICT_WAIT_MS, type Arbiter } from './arbiter.js';
import { Announcer } from './announcer.js';
import { createVoiceParts, loopOptions } from './voice.js';

/** Loudness is the RMS of this many of the latest audio chunks (a satellite's are 64 ms): ~0.8 s. */
const LOUDNESS_FRAMES = 12;
/**
 * A satellite's run requests that do work (a command, a change of stage) are acted on at most
 * this many times in this long (ms): a person wakes a room a few times a minute, and a satellite
 * with its own VAD starts one per burst of speech, at most one each `--vad-wake-word-timeout` (5 s).
 */
const RUN_PIPELINE_MAX = 5;
const RUN_PIPELINE_WINDOW_MS = 10_000;
/** IRIS reading a room's audio this far behind its arrival (s) is said: the machine does not keep up. */
const LAG_WARN_S = 3;
const LAG_WARN_EVERY_MS = 60_000;

export interface RoomStatus {
  name: string;
  uri: string;
  area: string;
  state: LinkState;
  /** Where the satellite starts the pipeline: `wake` (IRIS hears the wake word) or `asr` (the satellite does). */
  mode?: SatelliteMode;
  /** What the room is doing now. */
  doing: 'idle' | 'listening' | 'thinking' | 'speaking' | 'offline';
  /** When the wake word was last heard there (ISO 8601). */
  last_heard?: string;
  /** What was last understood there. */
  last_transcript?: string;
  /** Why the link last went down. */
  detail?: string;
  /** How far behind its audio IRIS reads, when a second or more (seconds): too many streaming rooms for this machine. */
  behind_s?: number;
}

/** What a room takes from the daemon. */
export interface RoomOptions {
  config: () => Config;
  log: Logger;
  /** The room's conversation turn (the daemon keeps a conversation per room). */
  respond: (room: string) => Responder<TurnResult>;
  /** The wake word fired in `room`: warm the model. */
  onWake?: (room: string) => void;
}

/** What a room shares with the others, from the registry. */
export interface RoomDeps {
  arbiter: Arbiter;
  /** Whether every room still streaming has read its audio past `ms` (performance.now()). */
  readBeyond: (ms: number) => boolean;
  /** An announcement the room could not say (its satellite went away): said elsewhere. */
  reroute: (announcement: Announcement, from: string) => void;
  settings: (name: string) => SatelliteConfig | undefined;
  /** Every room's engines: its own wake word and VAD on shared models, one recogniser pool, one voice. */
  engines: Engines;
  /** How many rooms have a voice running. */
  listening: () => number;
}

interface Voice {
  mode: SatelliteMode;
  /** Where the satellite's runs end. */
  end: PipelineStage;
  loop: VoiceLoop<TurnResult>;
  controller: AbortController;
  running: Promise<unknown>;
  announcer: Announcer;
}

export class Room {
  readonly #log: Logger;
  readonly #link: SatelliteLink;
  #source = new PushedAudio();
  #voice: Voice | undefined;
  #starting: Promise<void> | undefined;
  /** What the satellite said about itself. */
  #satellite: SatelliteInfo = { isSatellite: false };
  /** The wake word a satellite heard itself, before it asked for a run from asr. */
  #detection: string | undefined;
  /** When that request arrived (performance.now()). */
  #triggeredMs = 0;
  #loudness: number[] = [];
  #doing: RoomStatus['doing'] = 'offline';
  #lastHeard: string | undefined;
  #lastTranscript: string | undefined;
  /** How far behind its audio IRIS reads (s), and when that was last said. */
  #behindS = 0;
  #laggedAtMs = -Infinity;
  /** This room lost the wake word to another: its command ends quietly. */
  #yielded = false;
  /** When the satellite's latest run requests that did work arrived (performance.now()). */
  #runsAt: number[] = [];
  /** Its run requests are being ignored (said once). */
  #flooding = false;
  /** The run whose wake word was heard last, and its verdict (whether this room answers it). */
  #claimed: { run: number; verdict: Promise<boolean> } | undefined;
  #wakeWord = '';
  /** Announcements for this room before its voice was up. */
  #waiting: Announcement[] = [];
  /** Timers started during a run, told to the satellite once the run is over (after its spoken reply). */
  #started: Notice[] = [];

  /** `link`: the satellite's link, made for this room's events. */
  constructor(
    readonly name: string,
    private readonly o: RoomOptions,
    private readonly deps: RoomDeps,
    link: (events: SatelliteEvents, log: Logger) => SatelliteLink,
  ) {
    this.#log = o.log.child(name);
    this.#link = link({
      connected: (info) => this.#connected(info),
      disconnected: () => this.#disconnected(),
      audio: (samples) => this.#audio(samples),
      // It stopped streaming: the command ends there, as at the end of a file.
      audioStopped: () => this.#source.stop(),
      runPipeline: (start, end) => this.#runPipeline(start, end),
      wakeDetected: (name) => (this.#detection = name),
    }, this.#log);
  }

  get uri(): string {
    return this.#link.uri;
  }

  get connected(): boolean {
    return this.#link.state === 'connected';
  }

  /** Its voice runs: IRIS reads its stream. */
  get listening(): boolean {
    return this.#voice !== undefined;
  }

  /** Whether this room has read its audio past `ms`, or is not streaming (nothing arrived in the last half second), or not listening. */
  readBeyond(ms: number): boolean {
    // A room with no voice running or starting (it never asked to run, or its loop failed) hears no wake word: nothing to wait for.
    if (this.#voice === undefined && this.#starting === undefined) return true;
    const source = this.#source;
    return source.readingMs >= ms || performance.now() - source.lastPushMs > 500;
  }

  /** The room's area: the config's, else what the satellite says, else the room's name. */
  get area(): string {
    const configured = this.deps.settings(this.name)?.area ?? '';
    if (configured !== '') return configured;
    const said = cleanArea(this.#satellite.area ?? '');
    return said !== '' ? said : this.name.replace(/[_-]+/g, ' ');
  }

  start(): void {
    this.#link.start();
  }

  status(): RoomStatus {
    const doing = this.connected ? this.#doing : 'offline';
    return {
      name: this.name,
      uri: this.uri,
      area: this.area,
      state: this.#link.state,
      ...(this.#voice ? { mode: this.#voice.mode } : {}),
      doing,
      ...(this.#lastHeard === undefined ? {} : { last_heard: this.#lastHeard }),
      ...(this.#lastTranscript === undefined ? {} : { last_transcript: this.#lastTranscript }),
      ...(this.#link.lastError === '' ? {} : { detail: this.#link.lastError }),
      ...(this.connected && this.#voice !== undefined && this.#behindS >= 1 ? { behind_s: Math.round(this.#behindS * 10) / 10 } : {}),
    };
  }

  announce(announcement: Announcement): void {
    if (announcement.kind === 'timer') this.#link.timerFinished(announcement.id);
    if (this.#voice) this.#voice.announcer.announce(announcement);
    else this.#waiting.push(announcement); // said once the satellite runs its pipeline
  }

  /** A tool's notice for this room: a timer started during a run is told once the run is over. */
  notify(notice: Notice): void {
    if (this.#voice !== undefined && !this.#voice.loop.idle) this.#started.push(notice);
    else this.#link.timerStarted(notice.id, notice.seconds, notice.label);
  }

  /** Pause the satellite, close the link, stop the loop; returns what was still to be said. */
  async stop(): Promise<Announcement[]> {
    const unsaid = await this.#stopVoice();
    await this.#link.stop();
    this.#source.end();
    return [...unsaid, ...this.#waiting.splice(0)];
  }

  async restartVoice(): Promise<void> {
    const voice = this.#voice;
    const unsaid = await this.#stopVoice();
    if (voice !== undefined) await this.#startVoice(voice.mode, voice.end);
    for (const announcement of unsaid) this.announce(announcement);
  }

  // The satellite's events, from its link.

  #connected(info: SatelliteInfo): void {
    this.#satellite = info;
    this.#doing = 'idle';
    const name = info.name === undefined ? '' : ` (${JSON.stringify(info.name.slice(0, 60))})`; // the peer's text: quoted, one line
    this.#log.info(`connected to ${this.uri}${name}, area ${this.area}`);
    if (!info.isSatellite) this.#log.warn(`${this.uri} describes no satellite; is it a Wyoming service rather than a satellite?`);
  }

  #disconnected(): void {
    this.#doing = 'offline';
    // The next connection streams anew: what this one left unread is stale.
    this.#source.end();
    this.#source = new PushedAudio();
    // What it was saying or still had to say is said elsewhere, not lost (nor kept for a
    // reconnection, which would say it twice).
    void this.#stopVoice().then((unsaid) => {
      for (const announcement of [...unsaid, ...this.#waiting.splice(0)]) this.deps.reroute(announcement, this.name);
    });
  }

  #audio(samples: Int16Array): void {
    this.#source.push(samples);
    this.#checkLag(performance.now());
    this.#loudness.push(rms(samples));
    if (this.#loudness.length > LOUDNESS_FRAMES * 2) this.#loudness.splice(0, this.#loudness.length - LOUDNESS_FRAMES * 2);
  }

  #runPipeline(start: SatelliteMode, end: PipelineStage): void {
    if (!this.#mayRun(start, end)) return;
    if (start === 'asr') this.#triggeredMs = performance.now();
    void this.#run(start, end).catch((error: unknown) => {
      this.#log.error(`voice off: ${messageOf(error)}`);
      this.#link.listenFailed('not-started');
    });
  }

  /**
   * Whether to act on a run request from `stage`. Each that does work — a new command, or a
   * change of stage, which rebuilds the room's voice (models loaded again) — counts; past
   * `RUN_PIPELINE_MAX` in `RUN_PIPELINE_WINDOW_MS` the rest are ignored, with one log line, so a
   * satellite asking over and over cannot take the CPU from the other rooms.
   */
  #mayRun(stage: SatelliteMode, end: PipelineStage): boolean {
    if (stage === 'wake' && this.#voice?.mode === 'wake' && this.#voice.end === end) return true; // already so: no work
    const now = performance.now();
    this.#runsAt = this.#runsAt.filter((atMs) => now - atMs < RUN_PIPELINE_WINDOW_MS);
    if (this.#runsAt.length >= RUN_PIPELINE_MAX) {
      if (!this.#flooding) this.#log.warn(`the satellite asks to run its pipeline too often (over ${RUN_PIPELINE_MAX} times in ${RUN_PIPELINE_WINDOW_MS / 1000} s); ignoring that until it asks less`);
      this.#flooding = true;
      return false;
    }
    this.#flooding = false;
    this.#runsAt.push(now);
    return true;
  }

  /** The satellite asked for a pipeline from `stage` to `end`: the loop runs (rebuilt if either changed). */
  async #run(stage: SatelliteMode, end: PipelineStage): Promise<void> {
    if (this.#voice?.mode !== stage || this.#voice.end !== end) {
      await this.#stopVoice();
      await this.#startVoice(stage, end);
    }
    if (stage === 'asr') {
      const word = this.#detection !== undefined && this.#detection !== '' ? this.#detection : this.#wakeWord;
      this.#detection = undefined;
      this.#voice?.loop.trigger({ word, score: 1, atS: 0 });
    }
  }

  async #startVoice(mode: SatelliteMode, end: PipelineStage): Promise<void> {
    if (this.#starting) return this.#starting;
    this.#starting = (async () => {
      const config = this.o.config();
      const parts = await createVoiceParts(this.deps.engines, mode === 'wake');
      this.#wakeWord = wakeWordName(config.assistant.wake_word);
      await parts.sttStarted;
      const sink = this.#speaker();
      // The satellite plays its own chime (its awake WAV).
      const { earcon: _satellitesChime, ...options } = loopOptions(config, { ...parts, tts: this.#sayingTts(parts.tts) }, sink, this.o.respond(this.name));
      const loop = new VoiceLoop<TurnResult>({
        ...options,
        // A satellite that hears the wake word itself streams only the command: IRIS cannot
        // listen on for a follow-up.
        followUpS: mode === 'asr' ? 0 : config.assistant.follow_up_s,
        end,
        onWake: () => this.o.onWake?.(this.name),
        onEvent: (event) => this.#onVoiceEvent(event, mode),
        onRun: (run, line) => this.#onRun(run, line),
        mayAnswer: (run, signal) => this.#mayAnswer(run, signal),
      });
      const controller = new AbortController();
      const announcer = new Announcer({ sink, tts: parts.tts, isIdle: () => loop.idle, config: this.o.config, log: this.#log.child('announce') });
      const running = loop.run(this.#source, controller.signal).catch((error: unknown) => {
        if (controller.signal.aborted) return;
        this.#log.error(`voice loop: ${messageOf(error)}`);
        // Not a deaf room: the satellite's next run request starts a new loop.
        if (this.#voice?.loop === loop) this.#voice = undefined;
        this.#link.listenFailed('failed');
      });
      this.#voice = { mode, end, loop, controller, running, announcer };
      for (const announcement of this.#waiting.splice(0)) announcer.announce(announcement);
      this.#log.info(`${mode === 'wake' ? `listening for "${this.#wakeWord}" on its stream` : 'the satellite hears the wake word; IRIS takes the command'} (${parts.sttReason})`);
    })().finally(() => (this.#starting = undefined));
    return this.#starting;
  }

  async #stopVoice(): Promise<Announcement[]> {
    await this.#starting;
    const voice = this.#voice;
    if (voice === undefined) return [];
    this.#voice = undefined;
    const unsaid = voice.announcer.stop();
    voice.controller.abort(new DOMException('stopping', 'AbortError'));
    await voice.running;
    this.#tellStarted();
    return unsaid;
  }

  /**
   * Whether this room answers run `run`: its wake word's verdict, waited for (bounded), so a
   * room that loses never acts — no transcript, tool call or sound — before it hears so. A
   * follow-up (no wake word) has nothing to settle.
   */
  async #mayAnswer(run: number, signal: AbortSignal): Promise<boolean> {
    const claimed = this.#claimed;
    if (claimed?.run !== run) return true;
    let timer: NodeJS.Timeout | undefined;
    let onAbort = (): void => undefined;
    try {
      return await Promise.race([
        claimed.verdict,
        new Promise<boolean>((resolve) => {
          timer = setTimeout(() => {
            this.#log.warn(`turn ${run}: no verdict on the wake word within ${MAX_VERDICT_WAIT_MS / 1000} s; answering`);
            resolve(true);
          }, MAX_VERDICT_WAIT_MS);
          onAbort = () => resolve(false);
          signal.addEventListener('abort', onAbort, { once: true });
        }),
      ]);
    } finally {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
    }
  }

  /** The voice, telling the satellite what it is about to say (its scripts and lights). */
  #sayingTts(tts: TextToSpeech): TextToSpeech {
    return {
      synthesize: (text, signal) => {
        this.#link.saying(text);
        return tts.synthesize(text, signal);
      },
    };
  }

  /** Speech out through the satellite's speaker; the room is speaking meanwhile. */
  #speaker(): AudioSink {
    return {
      play: async (wav, signal) => {
        if (signal.aborted || !this.connected) return;
        this.#doing = 'speaking';
        await this.#link.speaker.play(wav, signal);
        if (this.#voice?.loop.idle !== false) this.#doing = 'idle'; // an announcement said
      },
    };
  }

  /** The loop's stage events: the room's state and its claim on the wake word; then the satellite is told. */
  #onVoiceEvent(event: VoiceEvent, mode: SatelliteMode): void {
    switch (event.type) {
      case 'run-start':
        this.#doing = 'idle';
        break;
      case 'wake-end': {
        this.#doing = 'listening';
        this.#lastHeard = new Date().toISOString();
        this.#yielded = false;
        this.#voice?.announcer.acknowledge();
        const { score, atS = 0 } = dataOf(event, 'wake-end');
        this.#claim(event.run, mode, mode === 'wake' ? score : undefined, atS);
        break;
      }
      case 'end_of_speech-end':
        this.#doing = 'thinking';
        break;
      case 'stt-end':
        this.#lastTranscript = dataOf(event, 'stt-end').text ?? '';
        break;
      case 'run-end':
        this.#doing = 'idle';
        break;
      default:
    }
    this.#link.pipelineEvent(event, { mode, wakeWord: this.#wakeWord, yielded: this.#yielded });
  }

  /** Claim run `run`'s wake word with the arbiter; a room that loses drops its command. */
  #claim(run: number, mode: SatelliteMode, score: number | undefined, atS: number): void {
    // When the wake word's audio arrived: its frame's arrival (IRIS heard it), or the satellite's run request (it did).
    const heardMs = mode === 'wake' ? (this.#source.receivedAt(atS) ?? performance.now()) : this.#triggeredMs;
    const evidence = () => ({ ...(score === undefined ? {} : { score }), loudness: this.#recentLoudness() });
    const claim = this.deps.arbiter.claim(this.name, heardMs, evidence, this.deps.readBeyond);
    this.#claimed = { run, verdict: claim.then((verdict) => verdict.won) };
    void claim.then((verdict) => {
      // Only for the command still being taken: a later one has its own claim.
      if (verdict.won || this.#voice === undefined || this.#claimed?.run !== run) return;
      const how = verdict.mine && verdict.theirs ? ` (${describeEvidence(verdict.theirs)} against ${describeEvidence(verdict.mine)} here)` : '';
      this.#log.info(`turn ${run}: room ${verdict.winner} heard the wake word better${how}; it answers`);
      this.#yielded = true;
      this.#voice.loop.drop();
    });
  }

  #onRun(run: VoiceRun<TurnResult>, line: string): void {
    if (run.outcome === 'no_speech' && run.followUp) this.#log.debug(line);
    else if (run.outcome === 'cancelled' && this.#yielded) this.#log.debug(line);
    else this.#log.info(line);
    this.#tellStarted();
  }

  /** Timers started during the run, told to the satellite now that its reply has been said. */
  #tellStarted(): void {
    for (const notice of this.#started.splice(0)) this.#link.timerStarted(notice.id, notice.seconds, notice.label);
  }

  /**
   * How far behind its arrival IRIS reads this room's audio. Past `LAG_WARN_S` the machine
   * carries more streaming rooms than its one JavaScript thread keeps up with (every room falls
   * behind together, and wake words come late or are missed): said in the log, at most once a
   * minute, and in `iris status`.
   */
  #checkLag(now: number): void {
    if (this.#voice === undefined || this.#source.readingMs === 0) return;
    this.#behindS = Math.max(0, (now - this.#source.readingMs) / 1000);
    if (this.#behindS < LAG_WARN_S || now - this.#laggedAtMs < LAG_WARN_EVERY_MS) return;
    this.#laggedAtMs = now;
    this.#log.warn(`IRIS hears this room ${this.#behindS.toFixed(1)} s late: this machine streams more rooms than it keeps up with (${this.deps.listening()} now); wake words come late or are missed`);
  }

  /** RMS of the latest ~1 s of the room's audio, 0–1. */
  #recentLoudness(): number {
    const recent = this.#loudness.slice(-LOUDNESS_FRAMES);
    return recent.length === 0 ? 0 : Math.sqrt(recent.reduce((sum, r) => sum + r * r, 0) / recent.length);
  }
}

/** RMS of 16-bit samples, 0–1. */
function rms(samples: Int16Array): number {
  let sum = 0;
  for (const s of samples) sum += (s / 32768) ** 2;
  return samples.length === 0 ? 0 : Math.sqrt(sum / samples.length);
}

/** A satellite's own area, as words fit for the system prompt (it is the peer's text: letters, digits, spaces only). */
function cleanArea(area: string): string {
  return area.replace(/[^\p{L}\p{N} '-]+/gu, ' ').replace(/\s+/g, ' ').trim().slice(0, 40);
}
