/**
 * The seam between a room and its satellite, whatever protocol the satellite speaks (Home
 * Assistant's `assist_satellite` entity, with a platform per protocol beside each other). A room
 * (daemon/room.ts) is a voice loop, an announcer and a conversation; its link brings the
 * satellite's microphone and requests in (`SatelliteEvents`) and takes the run's stage events,
 * the reply's audio and the room's timers out (`SatelliteLink`). Wyoming's link is
 * wyoming/satellite.ts; another protocol is a folder beside wyoming/ implementing this, and one
 * line in daemon/rooms.ts's `LINKS`.
 */
import type { AudioSink } from '../pipeline/audio.js';
import type { VoiceEvent } from '../pipeline/events.js';
import type { PipelineStage } from '../pipeline/pipeline.js';
import type { Logger } from '../log.js';

export type LinkState = 'connecting' | 'connected' | 'disconnected' | 'stopped';

/** Where a satellite's runs start: at `wake` (IRIS hears the wake word on its stream) or `asr` (the satellite heard it). */
export type SatelliteMode = 'wake' | 'asr';

/** What a satellite says about itself when it connects (its own words: untrusted text). */
export interface SatelliteInfo {
  name?: string;
  area?: string;
  /** False for an endpoint that answered but is not a satellite (a speech service, say). */
  isSatellite: boolean;
}

/** What a satellite tells its room; the link calls these. */
export interface SatelliteEvents {
  connected(info: SatelliteInfo): void;
  /** The link is gone (`why` in words); it reconnects unless stopped. */
  disconnected(why: string): void;
  /** Microphone audio as 16 kHz mono 16-bit, no faster than real time allows (the link drops a satellite that sends faster). */
  audio(samples: Int16Array): void;
  /** It stopped streaming (its own VAD heard the speech end): the command ends here. */
  audioStopped(): void;
  /** It asks for runs from `start` to `end`. */
  runPipeline(start: SatelliteMode, end: PipelineStage): void;
  /** It heard its own wake word, `name`, and will ask for a run from `asr`. */
  wakeDetected(name: string): void;
}

/** The room's run, as a link needs it to tell its satellite about the run's events. */
export interface RunContext {
  mode: SatelliteMode;
  /** The wake word the room listens for. */
  wakeWord: string;
  /** Another room heard the wake word better: this run ends quietly. */
  yielded: boolean;
}

/** Why a room could not listen: its voice would not start, or its loop failed (it starts again at the next request). */
export type ListenFailure = 'not-started' | 'failed';

export interface SatelliteLink {
  /** Where the satellite is (as configured or found). */
  readonly uri: string;
  readonly state: LinkState;
  /** Why the link last went down ('' when it never did). */
  readonly lastError: string;
  /** Connect in the background, and reconnect whenever the link is lost. */
  start(): void;
  /** Tell the satellite IRIS is going, close, stop reconnecting. */
  stop(): Promise<void>;
  /** The satellite's speaker: `play` resolves once it has played the audio; an aborted play stops there. */
  readonly speaker: AudioSink;
  /** A stage event of the room's run (Home Assistant's `on_pipeline_event`). */
  pipelineEvent(event: VoiceEvent, run: RunContext): void;
  /** The room is about to say `text` (a satellite's scripts and lights). */
  saying(text: string): void;
  /** The room could not listen. */
  listenFailed(why: ListenFailure): void;
  /** A timer set in this room started (`seconds` long, `label` '' for none). */
  timerStarted(id: string, seconds: number, label: string): void;
  /** A timer set in this room is done (it is being announced there). */
  timerFinished(id: string): void;
}

/** What a protocol's link is made from. */
export interface LinkOptions {
  uri: string;
  log: Logger;
  events: SatelliteEvents;
  /** First reconnect delay (ms); tests shorten it. */
  retryMs?: number;
}
