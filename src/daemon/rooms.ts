/**
 * Rooms: IRIS as the brain of Wyoming satellites (notes/wyoming.md §4). Each `[satellites.NAME]`
 * is a room: a link to the satellite (wyoming/client.ts) and the voice loop run over its audio —
 * a `PushedAudio` fed by its `audio-chunk`s, a sink that sends the reply back as audio events,
 * sentence by sentence — with the room's own conversation (memory, follow-ups, confirmations),
 * announcer and turn, so two rooms talk at once. The pipeline starts where the satellite asks:
 * at `wake` (IRIS hears the wake word on the stream) or at `asr` (the satellite heard it), and
 * ends where it asks (`end_stage`: after the words, the answer, or the spoken reply).
 * When several rooms hear the wake word within `ARBITRATION_MS`, the one with the best evidence
 * (wake score, then loudness) answers and the others drop their command quietly.
 */
import { messageOf } from '../errors.js';
import type { Config, SatelliteConfig } from '../config/schema.js';
import { satelliteRooms } from '../config/schema.js';
import type { Logger } from '../log.js';
import type { AudioSink } from '../pipeline/audio.js';
import { PushedAudio } from '../pipeline/capture.js';
import type { VoiceEvent } from '../pipeline/events.js';
import { Engines } from '../pipeline/engines.js';
import type { PipelineStage } from '../pipeline/pipeline.js';
import type { TextToSpeech } from '../pipeline/tts.js';
import { VoiceLoop, type Responder, type VoiceRun } from '../pipeline/voice.js';
import { wakeWordName } from '../pipeline/wakeword.js';
import type { Announcement } from '../toolhost/api.js';
import type { TurnResult } from '../conversation/types.js';
import { wavEvents, WyomingError, type WyomingEvent } from '../wyoming/events.js';
import { SatelliteLink, type LinkState } from '../wyoming/client.js';
import { AudioPace } from '../wyoming/pace.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { toSpeech } from '../wyoming/server.js';
import { Announcer } from './announcer.js';
import { browseWyoming, type Discovered } from './discover.js';
import { describeEndpoint } from '../wyoming/client.js';
import { createVoiceParts, loopOptions } from './voice.js';

/** Wyoming's stage names → the pipeline's (`intent` and `handle` are both the conversation). */
const WYOMING_STAGES: Record<string, PipelineStage> = { wake: 'wake', asr: 'stt', intent: 'conversation', handle: 'conversation', tts: 'tts' };

/** Detections of the same wake word this close together are one person heard in several rooms (ms). */
export const ARBITRATION_MS = 500;
/**
 * Wake scores closer than this are a tie, settled by loudness: the score is the first frame's
 * over the threshold, and frame alignment alone moves it by up to ~0.2 (the same audio in two
 * rooms scored 0.82 and 1.00).
 */
const SCORE_TIE = 0.25;
/** Loudness is the RMS of this many of the latest audio chunks (a satellite's are 64 ms): ~0.8 s. */
const LOUDNESS_FRAMES = 12;
/**
 * A satellite's `run-pipeline`s that do work (a command, a change of stage) are acted on at most
 * this many times in this long (ms): a person wakes a room a few times a minute, and a satellite
 * with its own VAD starts one per burst of speech, at most one each `--vad-wake-word-timeout` (5 s).
 */
const RUN_PIPELINE_MAX = 5;
const RUN_PIPELINE_WINDOW_MS = 10_000;
/** Reply audio is sent this far ahead of where the satellite plays it (ms): network and its buffers, never a gap. */
const LEAD_MS = 500;
/** A played reply is taken as heard this long after its audio would have ended, without `played` (ms), as Home Assistant does. */
const PLAYED_GRACE_MS = 500;

export interface RoomStatus {
  name: string;
  uri: string;
  area: string;
  state: LinkState;
  /** Where the satellite starts the pipeline: `wake` (IRIS hears the wake word) or `asr` (the satellite does). */
  mode?: 'wake' | 'asr';
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

/** What the rooms share, from the daemon. */
export interface RoomsOptions {
  config: () => Config;
  log: Logger;
  /** Where the engines come from (the daemon shares one with the microphone and Wyoming); default: their own. */
  engines?: Engines;
  /** The room's conversation turn (the daemon keeps a conversation per room). */
  respond: (room: string) => Responder<TurnResult>;
  /** The wake word fired in `room`: warm the model. */
  onWake?: (room: string) => void;
  /**
   * An announcement its room took but could not say (the satellite went away, or the room was
   * removed, while or before saying it): every other connected room says it, and so does this
   * (the daemon's own voice), as for an announcement whose room is gone.
   */
  unsaid?: (announcement: Announcement) => void;
  /** First reconnect delay (ms); tests shorten it. */
  retryMs?: number;
  /** Find satellites on the network (`[satellites] discover`); default avahi-browse. */
  browse?: (signal: AbortSignal) => Promise<Discovered[]>;
  /** Browse this often (ms); default a minute. */
  browseEveryMs?: number;
}

/** IRIS reading a room's audio this far behind its arrival (s) is said: the machine does not keep up. */
const LAG_WARN_S = 3;
const LAG_WARN_EVERY_MS = 60_000;

/** Longest wait for a room whose reading lags behind to catch up before the rooms' claims are settled (ms). */
const MAX_SETTLE_MS = 3_000;
/** Longest a room's command waits for its verdict before acting anyway (ms): the arbiter settles within MAX_SETTLE_MS and a poll; this is the backstop. */
const MAX_VERDICT_WAIT_MS = MAX_SETTLE_MS + 1_000;
/** How often an open window checks whether every streaming room has read past it (ms). */
const SETTLE_POLL_MS = 50;

interface Evidence {
  /** The wake-word score, when IRIS scored it (not when the satellite heard it). */
  score?: number;
  loudness: number;
}

/** How a claim was settled: won, or lost to `winner` (with both rooms' evidence, for the log). */
type Verdict = { won: true } | { won: false; winner: string; mine?: Evidence; theirs?: Evidence };

interface Claim {
  room: string;
  evidence: () => Evidence;
  /** One per claim the room made in the window (a trigger, then another): all get its verdict. */
  decide: ((verdict: Verdict) => void)[];
}

/**
 * Settles which room answers when several hear the same wake word at once. Rooms are compared
 * by when the audio *arrived* (not when a busy machine got round to scoring it): claims whose
 * wake word arrived within `ARBITRATION_MS` of the first are one window, settled once every
 * streaming room has read past it (or after `MAX_SETTLE_MS`). A claim for a window already
 * settled loses: another room is answering.
 */
interface ClaimWindow {
  /** When the first claim's wake word arrived (performance.now()). */
  firstMs: number;
  openedMs: number;
  claims: Claim[];
  timer: NodeJS.Timeout;
}

export class Arbiter {
  #window: ClaimWindow | undefined;
  #settled: { firstMs: number; winner: string } | undefined;

  /**
   * `heardMs`: when the wake word's audio arrived; `readBeyond(ms)`: whether every room still
   * streaming has read its audio past that time. Resolves true when `room` answers. A room that
   * claims again in the same window (triggered twice) is one claimant, with its latest
   * evidence: it neither loses to itself nor counts twice against the others.
   */
  claim(room: string, heardMs: number, evidence: () => Evidence, readBeyond: (ms: number) => boolean): Promise<Verdict> {
    const settled = this.#settled;
    if (settled !== undefined && Math.abs(heardMs - settled.firstMs) <= ARBITRATION_MS) {
      return Promise.resolve(settled.winner === room ? { won: true } : { won: false, winner: settled.winner });
    }
    return new Promise((decide) => {
      const window = this.#window;
      if (window !== undefined && Math.abs(heardMs - window.firstMs) <= ARBITRATION_MS) {
        const mine = window.claims.find((c) => c.room === room);
        if (mine === undefined) window.claims.push({ room, evidence, decide: [decide] });
        else {
          mine.evidence = evidence;
          mine.decide.push(decide);
        }
        return;
      }
      if (window !== undefined) this.#settle(); // an older window: done
      const opened: ClaimWindow = { firstMs: heardMs, openedMs: performance.now(), claims: [{ room, evidence, decide: [decide] }], timer: setInterval(() => {
        if (readBeyond(opened.firstMs + ARBITRATION_MS) || performance.now() - opened.openedMs > MAX_SETTLE_MS) this.#settle();
      }, SETTLE_POLL_MS) };
      opened.timer.unref();
      this.#window = opened;
    });
  }

  #settle(): void {
    const window = this.#window;
    if (window === undefined) return;
    clearInterval(window.timer);
    this.#window = undefined;
    const scored = window.claims.map((c) => ({ ...c, e: c.evidence() }));
    const best = scored.reduce<(typeof scored)[number] | undefined>((a, b) => (a === undefined || better(b.e, a.e) ? b : a), undefined);
    this.#settled = { firstMs: window.firstMs, winner: best?.room ?? '' };
    for (const c of scored) {
      const verdict: Verdict = c === best || best === undefined ? { won: true } : { won: false, winner: best.room, mine: c.e, theirs: best.e };
      for (const decide of c.decide) decide(verdict);
    }
  }

  stop(): void {
    clearInterval(this.#window?.timer);
    for (const c of this.#window?.claims ?? []) for (const decide of c.decide) decide({ won: true });
    this.#window = undefined;
  }
}

/** Whether `a` is better evidence than `b`: a clearly higher wake score, else louder. */
export function better(a: Evidence, b: Evidence): boolean {
  if (a.score !== undefined && b.score !== undefined && Math.abs(a.score - b.score) > SCORE_TIE) return a.score > b.score;
  return a.loudness > b.loudness;
}

/** Every configured room, kept in step with the config. */
export class Rooms {
  readonly #o: RoomsOptions;
  readonly #rooms = new Map<string, Room>();
  readonly #arbiter = new Arbiter();
  readonly #engines: Engines;
  /** Satellites found on the network, by room name. */
  #discovered = new Map<string, Discovered>();
  /** Endpoints found that are not satellites (Wyoming services, IRIS itself): not asked again. */
  readonly #notSatellites = new Set<string>();
  readonly #stopping = new AbortController();
  #browsing: Promise<void> | undefined;

  constructor(options: RoomsOptions) {
    this.#o = options;
    this.#engines = options.engines ?? new Engines(options.config, options.log);
  }

  /** Connect to every configured room (in the background), and browse for more when told to. */
  start(): void {
    this.reconfigure();
  }

  /** Add the rooms the config gained, drop the ones it lost, reconnect the ones whose address changed. */
  reconfigure(): void {
    const configured = Object.entries(satelliteRooms(this.#o.config())).filter(([, s]) => s.enabled !== false);
    const taken = new Set(configured.flatMap(([name, s]) => [name, s.uri]));
    const discover = this.#o.config().satellites.discover === true;
    // Found rooms go with discovery: switched off, they are dropped with it.
    const found = discover ? [...this.#discovered.values()].filter((d) => !taken.has(d.name) && !taken.has(d.uri)).map((d): [string, { uri: string }] => [d.name, { uri: d.uri }]) : [];
    const wanted: [string, { uri: string }][] = [...configured, ...found];
    if (discover) this.#browsing ??= this.#browse();
    const names = new Set(wanted.map(([name]) => name));
    for (const [name, room] of this.#rooms) {
      const now = wanted.find(([n]) => n === name)?.[1];
      if (!names.has(name) || now?.uri !== room.uri) {
        this.#rooms.delete(name);
        this.#o.log.info(`room ${name}: ${names.has(name) ? 'address changed' : 'removed'}`);
        void room.stop().then((unsaid) => {
          for (const announcement of unsaid) this.#reroute(announcement, name);
        });
      }
    }
    for (const [name, settings] of wanted) {
      if (this.#rooms.has(name)) continue;
      const room = new Room(name, settings.uri, this.#o, this.#deps());
      this.#rooms.set(name, room);
      room.start();
    }
  }

  /** Rebuild each room's voice from the config in force (a voice setting changed). */
  async restartVoices(): Promise<void> {
    await Promise.all([...this.#rooms.values()].map((room) => room.restartVoice()));
  }

  /** The area a room's conversation tells the model ('' for no such room). */
  area(name: string): string {
    return this.#rooms.get(name)?.area ?? '';
  }

  status(): RoomStatus[] {
    return [...this.#rooms.values()].map((room) => room.status());
  }

  /**
   * Say an announcement in the room it belongs to: true when a room took it. One whose room is
   * gone (or offline) is said in every connected room, and false is returned so the local voice
   * says it too; one from no room is not the rooms' (false).
   */
  announce(announcement: Announcement): boolean {
    if (announcement.room === undefined) return false;
    const room = this.#rooms.get(announcement.room);
    if (room?.connected) {
      room.announce(announcement);
      return true;
    }
    for (const other of this.#rooms.values()) if (other.connected) other.announce(announcement);
    return false;
  }

  /** What `from` could not say: every other connected room says it, and the daemon's voice. */
  #reroute(announcement: Announcement, from: string): void {
    if (this.#stopping.signal.aborted) return; // stopping: `stop()` returns it
    const others = [...this.#rooms.values()].filter((room) => room.name !== from && room.connected);
    this.#o.log.info(`${announcement.kind} #${announcement.id} not said in ${from}: said ${others.length > 0 ? `in ${others.map((r) => r.name).join(', ')} and ` : ''}here instead`);
    for (const other of others) other.announce(announcement);
    this.#o.unsaid?.(announcement);
  }

  async stop(): Promise<Announcement[]> {
    this.#stopping.abort(new Error('stopping'));
    await this.#browsing; // quick: the browse and each describe follow the stop signal
    this.#arbiter.stop();
    const unsaid = await Promise.all([...this.#rooms.values()].map((room) => room.stop()));
    this.#rooms.clear();
    if (this.#o.engines === undefined) await this.#engines.stop(); // shared engines are their owner's to stop
    return unsaid.flat();
  }

  /** Browse for satellites until stopped or discovery is switched off; new ones become rooms. */
  async #browse(): Promise<void> {
    const log = this.#o.log.child('discover');
    const signal = this.#stopping.signal;
    let said = '';
    while (!signal.aborted && this.#o.config().satellites.discover === true) {
      try {
        const found = await (this.#o.browse ?? browseWyoming)(signal);
        said = '';
        const next = new Map<string, Discovered>();
        for (const d of found) {
          if (signal.aborted) break;
          if (this.#notSatellites.has(d.uri)) continue;
          const known = [...this.#discovered.values()].some((k) => k.uri === d.uri);
          if (!known) {
            const info = await describeEndpoint(d.uri).catch(() => undefined);
            if (info === undefined) continue; // not answering now: asked again next time
            if (info.satellite === undefined) {
              this.#notSatellites.add(d.uri);
              continue;
            }
            log.info(`found ${JSON.stringify(d.service)} at ${d.uri}: room ${d.name}`);
          }
          next.set(d.name, d);
        }
        // A satellite that stops announcing itself stays while it is connected (mDNS comes and goes).
        for (const [name, d] of this.#discovered) if (!next.has(name) && this.#rooms.get(name)?.connected) next.set(name, d);
        this.#discovered = next;
        this.reconfigure();
      } catch (error) {
        if (messageOf(error) !== said) log.warn(`discovery: ${messageOf(error)}`); // said once, not every minute
        said = messageOf(error);
      }
      await sleep(this.#o.browseEveryMs ?? 60_000, undefined, { signal }).catch(() => undefined);
    }
    this.#browsing = undefined;
  }

  #deps(): RoomDeps {
    return {
      arbiter: this.#arbiter,
      readBeyond: (ms) => [...this.#rooms.values()].every((r) => r.readBeyond(ms)),
      reroute: (announcement, from) => this.#reroute(announcement, from),
      settings: (name) => satelliteRooms(this.#o.config())[name],
      engines: this.#engines,
      listening: () => [...this.#rooms.values()].filter((r) => r.listening).length,
    };
  }
}

interface RoomDeps {
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
  mode: 'wake' | 'asr';
  /** Where the satellite's runs end. */
  end: PipelineStage;
  loop: VoiceLoop<TurnResult>;
  controller: AbortController;
  running: Promise<unknown>;
  announcer: Announcer;
}

/** One satellite: its link, its voice loop over the satellite's audio, its announcements. */
class Room {
  readonly #log: Logger;
  readonly #link: SatelliteLink;
  #source = new PushedAudio();
  #voice: Voice | undefined;
  #starting: Promise<void> | undefined;
  /** The satellite's own `info.satellite` (its name, area). */
  #satellite: Record<string, unknown> = {};
  /** The detection a satellite sent before its `run-pipeline` from the asr stage. */
  #detection: string | undefined;
  /** When that `run-pipeline` arrived (performance.now()). */
  #triggeredMs = 0;
  #played: (() => void)[] = [];
  /** `played` events still to come for sentences cut short, to be ignored. */
  #stalePlayed = 0;
  #loudness: number[] = [];
  #doing: RoomStatus['doing'] = 'offline';
  #lastHeard: string | undefined;
  #lastTranscript: string | undefined;
  /** How far behind its audio IRIS reads (s), and when that was last said. */
  #behindS = 0;
  #laggedAtMs = -Infinity;
  /** This room lost the wake word to another: its command ends quietly. */
  #yielded = false;
  /** When the satellite's latest `run-pipeline`s that did work arrived (performance.now()). */
  #runsAt: number[] = [];
  /** Its `run-pipeline`s are being ignored (said once). */
  #flooding = false;
  /** The run whose wake word was heard last, and its verdict (whether this room answers it). */
  #claimed: { run: number; verdict: Promise<boolean> } | undefined;
  #wakeWord = '';
  /** Announcements for this room before its voice was up. */
  #waiting: Announcement[] = [];
  /** Audio received since the link came up (s), since when (performance.now()), and how fast it may come (wyoming/pace.ts). */
  #audio = { seconds: 0, sinceMs: 0, pace: new AudioPace() };

  constructor(
    readonly name: string,
    readonly uri: string,
    private readonly o: RoomsOptions,
    private readonly deps: RoomDeps,
  ) {
    this.#log = o.log.child(name);
    this.#link = new SatelliteLink({
      uri,
      log: this.#log,
      ...(o.retryMs === undefined ? {} : { retryMs: o.retryMs }),
      onConnected: (info) => this.#connected(info),
      onDisconnected: () => this.#disconnected(),
      onEvent: (event) => this.#event(event),
    });
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
    const said = typeof this.#satellite.area === 'string' ? cleanArea(this.#satellite.area) : '';
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
    if (announcement.kind === 'timer') this.#link.send('timer-finished', { id: announcement.id });
    if (this.#voice) this.#voice.announcer.announce(announcement);
    else this.#waiting.push(announcement); // said once the satellite runs its pipeline
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

  #connected(info: Record<string, unknown>): void {
    const satellite = info.satellite;
    this.#satellite = satellite !== null && typeof satellite === 'object' ? (satellite as Record<string, unknown>) : {};
    this.#doing = 'idle';
    this.#audio = { seconds: 0, sinceMs: performance.now(), pace: new AudioPace() };
    this.#stalePlayed = 0;
    const name = typeof this.#satellite.name === 'string' ? ` (${JSON.stringify(this.#satellite.name.slice(0, 60))})` : ''; // the peer's text: quoted, one line
    this.#log.info(`connected to ${this.uri}${name}, area ${this.area}`);
    if (satellite === undefined) this.#log.warn(`${this.uri} describes no satellite; is it a Wyoming service rather than a satellite?`);
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

  #event(event: WyomingEvent): void {
    const { data } = event;
    switch (event.type) {
      case 'audio-chunk': {
        if (event.payload === undefined) return;
        const samples = toSpeech(event);
        // A peer streaming faster than real time would take the CPU from every other room.
        const now = performance.now();
        const audio = this.#audio;
        audio.seconds += samples.length / 16_000;
        if (audio.pace.take(samples.length / 16_000, now) > 0) {
          throw new WyomingError('wyoming_too_fast', `it sent audio faster than real time (${Math.round(audio.seconds)} s in ${((now - audio.sinceMs) / 1000).toFixed(1)} s)`);
        }
        this.#source.push(samples);
        this.#checkLag(now);
        this.#loudness.push(rms(samples));
        if (this.#loudness.length > LOUDNESS_FRAMES * 2) this.#loudness.splice(0, this.#loudness.length - LOUDNESS_FRAMES * 2);
        return;
      }
      case 'run-pipeline': {
        const stage = data.start_stage;
        if (stage !== 'wake' && stage !== 'asr') {
          this.#link.send('error', { text: `IRIS starts a satellite's pipeline at the wake or asr stage, not "${String(stage)}"`, code: 'iris-stage' });
          return;
        }
        const named = typeof data.end_stage === 'string' ? data.end_stage : data.end_stage === undefined ? 'tts' : '';
        const end = Object.hasOwn(WYOMING_STAGES, named) ? WYOMING_STAGES[named] : undefined;
        if (end === undefined || (stage === 'asr' && end === 'wake')) {
          this.#link.send('error', { text: `IRIS cannot end a pipeline started at ${stage} at "${named.slice(0, 40)}"`, code: 'iris-stage' });
          return;
        }
        if (!this.#mayRun(stage, end)) return;
        if (stage === 'asr') this.#triggeredMs = performance.now();
        void this.#run(stage, end).catch((error: unknown) => {
          this.#log.error(`voice off: ${messageOf(error)}`);
          this.#link.send('error', { text: 'IRIS could not start listening', code: 'iris-voice' });
        });
        return;
      }
      case 'detection':
        this.#detection = typeof data.name === 'string' ? data.name.slice(0, 100) : '';
        return;
      case 'played':
        if (this.#stalePlayed > 0) this.#stalePlayed -= 1;
        else this.#played.shift()?.();
        return;
      case 'audio-stop':
        // It stopped streaming (its own VAD heard the speech end, or a timeout): the command
        // ends there, as at the end of a file, instead of waiting for silence that never comes.
        this.#source.stop();
        return;
      case 'audio-start':
        return;
      default:
        this.#log.debug(`ignored a "${event.type}" event`);
    }
  }

  /**
   * Whether to act on a `run-pipeline` from `stage`. Each that does work — a new command, or a
   * change of stage, which rebuilds the room's voice (models loaded again) — counts; past
   * `RUN_PIPELINE_MAX` in `RUN_PIPELINE_WINDOW_MS` the rest are ignored, with one log line, so a
   * satellite asking over and over cannot take the CPU from the other rooms.
   */
  #mayRun(stage: 'wake' | 'asr', end: PipelineStage): boolean {
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
  async #run(stage: 'wake' | 'asr', end: PipelineStage): Promise<void> {
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

  async #startVoice(mode: 'wake' | 'asr', end: PipelineStage): Promise<void> {
    if (this.#starting) return this.#starting;
    this.#starting = (async () => {
      const config = this.o.config();
      const parts = await createVoiceParts(this.deps.engines, mode === 'wake');
      this.#wakeWord = wakeWordName(config.assistant.wake_word);
      await parts.sttStarted;
      const sink = this.#sink();
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
        // Not a deaf room: the satellite's next run-pipeline starts a new loop.
        if (this.#voice?.loop === loop) this.#voice = undefined;
        this.#link.send('error', { text: 'IRIS could not listen; it starts again at the next wake word', code: 'failed' });
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
    for (const played of this.#played.splice(0)) played();
    await voice.running;
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

  /** The voice, telling the satellite what it is about to say (`synthesize`: its scripts and LEDs). */
  #sayingTts(tts: TextToSpeech): TextToSpeech {
    return {
      synthesize: (text, signal) => {
        this.#link.send('synthesize', { text });
        return tts.synthesize(text, signal);
      },
    };
  }

  /**
   * Speech out: the WAV as audio events to the satellite, sent at the pace it plays (`LEAD_MS`
   * ahead), so barge-in can stop it: an aborted sentence ends with `audio-stop` at once (Home
   * Assistant's interruption) and what was not sent is never heard. Done at `played`, or when
   * the audio would have ended.
   */
  #sink(): AudioSink {
    return {
      play: async (wav, signal) => {
        if (signal.aborted || !this.connected) return;
        const { events, seconds } = wavEvents(wav);
        this.#doing = 'speaking';
        const startMs = performance.now();
        for (const { type, data, payload } of events) {
          const dueMs = startMs + (type === 'audio-chunk' ? Number(data.timestamp) : 0) - LEAD_MS;
          if (dueMs > performance.now()) await sleep(dueMs - performance.now(), undefined, { signal }).catch(() => undefined);
          if (signal.aborted) {
            this.#link.send('audio-stop', { timestamp: Math.round(performance.now() - startMs) });
            this.#stalePlayed += 1; // the satellite's `played` for this one is not the next sentence's
            return;
          }
          this.#link.send(type, data, payload);
        }
        return new Promise<void>((resolve) => {
          const done = () => {
            clearTimeout(timer);
            signal.removeEventListener('abort', done);
            this.#played = this.#played.filter((p) => p !== done);
            if (this.#voice?.loop.idle !== false) this.#doing = 'idle'; // an announcement said
            resolve();
          };
          const timer = setTimeout(done, seconds * 1000 + PLAYED_GRACE_MS);
          signal.addEventListener('abort', done, { once: true });
          this.#played.push(done);
        });
      },
    };
  }

  /** The loop's stage events, mirrored to the satellite as Home Assistant does. */
  #onVoiceEvent(event: VoiceEvent, mode: 'wake' | 'asr'): void {
    const atMs = Math.round(Number(event.data?.atS ?? 0) * 1000);
    const text = (key: string, otherwise: string): string => (typeof event.data?.[key] === 'string' ? event.data[key] : otherwise);
    switch (event.type) {
      case 'run-start':
        this.#doing = 'idle';
        if (mode === 'wake' && event.data?.followUp !== true) this.#link.send('detect', { names: [this.#wakeWord] });
        return;
      case 'wake-end': {
        this.#doing = 'listening';
        this.#lastHeard = new Date().toISOString();
        this.#yielded = false;
        this.#voice?.announcer.acknowledge();
        if (mode === 'wake') this.#link.send('detection', { name: text('word', this.#wakeWord), timestamp: atMs });
        const score = mode === 'wake' && typeof event.data?.score === 'number' ? event.data.score : undefined;
        const run = event.run;
        // When the wake word's audio arrived: its frame's arrival (IRIS heard it), or the satellite's run-pipeline (it did).
        const heardMs = mode === 'wake' ? (this.#source.receivedAt(Number(event.data?.atS ?? 0)) ?? performance.now()) : this.#triggeredMs;
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
        return;
      }
      case 'speech-start':
        this.#link.send('voice-started', { timestamp: atMs });
        return;
      case 'end_of_speech-end':
        this.#doing = 'thinking';
        this.#link.send('voice-stopped', { timestamp: atMs });
        return;
      case 'stt-end':
        this.#lastTranscript = text('text', '');
        this.#link.send('transcript', { text: this.#lastTranscript });
        return;
      case 'error':
        this.#link.send('error', { text: text('message', 'failed'), code: 'iris-error' });
        return;
      case 'run-end': {
        this.#doing = 'idle';
        const outcome = event.data?.outcome;
        if (mode !== 'asr') return;
        // A satellite streams its command until told the words (`transcript`) or that there were none.
        if (outcome === 'no_speech') this.#link.send('error', { text: 'No speech was heard', code: 'stt-no-text-recognized' });
        else if (outcome === 'cancelled' && this.#yielded) this.#link.send('run-satellite'); // back to its wake word, quietly
        return;
      }
      default:
    }
  }

  #onRun(run: VoiceRun<TurnResult>, line: string): void {
    if (run.outcome === 'no_speech' && run.followUp) this.#log.debug(line);
    else if (run.outcome === 'cancelled' && this.#yielded) this.#log.debug(line);
    else this.#log.info(line);
    if (run.outcome !== 'answered') return;
    for (const call of run.result?.tool_calls ?? []) {
      const timer = call.result.structuredContent?.timer as { id?: unknown; duration_s?: unknown; label?: unknown } | undefined;
      if (call.name !== 'set_timer' || call.result.isError || timer === undefined || typeof timer.id !== 'string') continue;
      this.#link.send('timer-started', {
        id: timer.id,
        total_seconds: typeof timer.duration_s === 'number' ? timer.duration_s : 0,
        ...(typeof timer.label === 'string' && timer.label !== '' ? { name: timer.label } : {}),
      });
    }
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

const describeEvidence = (e: Evidence): string => `${e.score === undefined ? '' : `score ${e.score.toFixed(2)}, `}loudness ${e.loudness.toFixed(3)}`;

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
