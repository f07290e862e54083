/**
 * A Wyoming satellite as a room's link (satellite/link.ts), the way Home Assistant's
 * `WyomingAssistSatellite` bridges one to its pipeline (notes/wyoming.md §4): the satellite's
 * messages in — its audio (16 kHz mono, no faster than its pace), `run-pipeline` with its
 * stages mapped to the pipeline's, its own `detection`, `played` — and the room's run out as
 * Wyoming messages: `detect`, `detection`, `voice-started/-stopped`, `transcript`,
 * `synthesize`, the reply's audio sent at the pace the satellite plays it, `error`, timers.
 * The connection (connect, describe, pings, reconnects) is client.ts's.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '../log.js';
import type { AudioSink } from '../pipeline/audio.js';
import { dataOf, type VoiceEvent } from '../pipeline/events.js';
import type { PipelineStage } from '../pipeline/pipeline.js';
import type { LinkOptions, LinkState, ListenFailure, RunContext, SatelliteEvents, SatelliteLink } from '../satellite/link.js';
import { toSpeech, wavMessages } from './audio.js';
import { SatelliteConnection } from './client.js';
import { WyomingError, type WyomingEvent } from './events.js';
import { decode, type Message, type WyomingStage } from './messages.js';
import { AudioPace } from './pace.js';

/** Wyoming's stage names → the pipeline's (`intent` and `handle` are both the conversation). */
const STAGES: Record<WyomingStage, PipelineStage> = { wake: 'wake', asr: 'stt', intent: 'conversation', handle: 'conversation', tts: 'tts' };

/** Reply audio is sent this far ahead of where the satellite plays it (ms): network and its buffers, never a gap. */
const LEAD_MS = 500;
/** A played reply is taken as heard this long after its audio would have ended, without `played` (ms), as Home Assistant does. */
const PLAYED_GRACE_MS = 500;
/** A satellite's own wake-word name is kept to this many characters (it is the peer's text). */
const MAX_NAME_CHARS = 100;

const FAILURES: Record<ListenFailure, { text: string; code: string }> = {
  'not-started': { text: 'IRIS could not start listening', code: 'iris-voice' },
  failed: { text: 'IRIS could not listen; it starts again at the next wake word', code: 'failed' },
};

export class WyomingSatellite implements SatelliteLink {
  readonly uri: string;
  readonly #events: SatelliteEvents;
  readonly #log: Logger;
  readonly #connection: SatelliteConnection;
  /** Plays waiting for the satellite's `played`. */
  #played: (() => void)[] = [];
  /** `played` events still to come for sentences cut short, to be ignored. */
  #stalePlayed = 0;
  /** Audio received since the link came up (s), since when (performance.now()), and how fast it may come (pace.ts). */
  #audio = { seconds: 0, sinceMs: 0, pace: new AudioPace() };

  constructor(options: LinkOptions) {
    this.uri = options.uri;
    this.#events = options.events;
    this.#log = options.log;
    this.#connection = new SatelliteConnection({
      uri: options.uri,
      log: options.log,
      ...(options.retryMs === undefined ? {} : { retryMs: options.retryMs }),
      onConnected: (info) => {
        this.#audio = { seconds: 0, sinceMs: performance.now(), pace: new AudioPace() };
        this.#stalePlayed = 0;
        this.#events.connected({ ...info.satellite, isSatellite: info.satellite !== undefined });
      },
      onDisconnected: (why) => {
        for (const played of this.#played.splice(0)) played(); // nothing more will be played there
        this.#events.disconnected(why);
      },
      onEvent: (event) => this.#receive(event),
    });
  }

  get state(): LinkState {
    return this.#connection.state;
  }

  get lastError(): string {
    return this.#connection.lastError;
  }

  start(): void {
    this.#connection.start();
  }

  stop(): Promise<void> {
    return this.#connection.stop();
  }

  /** A message from the satellite. One it cannot have sent (a bad format, audio too fast) throws: the connection tells it why and drops it. */
  #receive(event: WyomingEvent): void {
    let message: Message | undefined;
    try {
      message = decode(event);
    } catch (error) {
      // A run it cannot have is refused, and the link stays.
      if (event.type !== 'run-pipeline' || !(error instanceof WyomingError)) throw error;
      return this.#send({ type: 'error', text: `IRIS ${error.message}`, code: 'iris-stage' });
    }
    switch (message?.type) {
      case 'audio-chunk': {
        if (message.audio.length === 0) return;
        const samples = toSpeech(message);
        // A peer streaming faster than real time would take the CPU from every other room.
        const now = performance.now();
        const audio = this.#audio;
        audio.seconds += samples.length / 16_000;
        if (audio.pace.take(samples.length / 16_000, now) > 0) {
          throw new WyomingError('wyoming_too_fast', `it sent audio faster than real time (${Math.round(audio.seconds)} s in ${((now - audio.sinceMs) / 1000).toFixed(1)} s)`);
        }
        return this.#events.audio(samples);
      }
      case 'run-pipeline': {
        const { start_stage: start, end_stage: end } = message;
        if (start !== 'wake' && start !== 'asr') return this.#send({ type: 'error', text: `IRIS starts a satellite's pipeline at the wake or asr stage, not "${start}"`, code: 'iris-stage' });
        return this.#events.runPipeline(start, STAGES[end]);
      }
      case 'detection':
        return this.#events.wakeDetected(message.name.slice(0, MAX_NAME_CHARS));
      case 'played':
        if (this.#stalePlayed > 0) this.#stalePlayed -= 1;
        else this.#played.shift()?.();
        return;
      case 'audio-stop':
        // It stopped streaming (its own VAD heard the speech end, or a timeout): the command
        // ends there, as at the end of a file, instead of waiting for silence that never comes.
        return this.#events.audioStopped();
      case 'audio-start':
        return;
      default:
        this.#log.debug(`ignored a "${event.type}" event`);
    }
  }

  /**
   * Speech out: the WAV as audio messages, sent at the pace the satellite plays them
   * (`LEAD_MS` ahead), so barge-in can stop it: an aborted sentence ends with `audio-stop` at
   * once (Home Assistant's interruption) and what was not sent is never heard. Done at
   * `played`, or when the audio would have ended.
   */
  readonly speaker: AudioSink = {
    play: async (wav, signal) => {
      if (signal.aborted || this.state !== 'connected') return;
      const { messages, seconds } = wavMessages(wav);
      const startMs = performance.now();
      for (const message of messages) {
        const dueMs = startMs + (message.type === 'audio-chunk' ? (message.timestamp ?? 0) : 0) - LEAD_MS;
        if (dueMs > performance.now()) await sleep(dueMs - performance.now(), undefined, { signal }).catch(() => undefined);
        if (signal.aborted) {
          this.#send({ type: 'audio-stop', timestamp: Math.round(performance.now() - startMs) });
          this.#stalePlayed += 1; // the satellite's `played` for this one is not the next sentence's
          return;
        }
        this.#send(message);
      }
      return new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          signal.removeEventListener('abort', done);
          this.#played = this.#played.filter((p) => p !== done);
          resolve();
        };
        const timer = setTimeout(done, seconds * 1000 + PLAYED_GRACE_MS);
        signal.addEventListener('abort', done, { once: true });
        this.#played.push(done);
      });
    },
  };

  /** The room's stage events, told to the satellite as Home Assistant does. */
  pipelineEvent(event: VoiceEvent, run: RunContext): void {
    const timestamp = (atS = 0): number => Math.round(atS * 1000);
    switch (event.type) {
      case 'run-start':
        if (run.mode === 'wake' && dataOf(event, 'run-start').followUp !== true) this.#send({ type: 'detect', names: [run.wakeWord] });
        return;
      case 'wake-end': {
        const { word, atS } = dataOf(event, 'wake-end');
        if (run.mode === 'wake') this.#send({ type: 'detection', name: word ?? run.wakeWord, timestamp: timestamp(atS) });
        return;
      }
      case 'speech-start':
        return this.#send({ type: 'voice-started', timestamp: timestamp(dataOf(event, 'speech-start').atS) });
      case 'end_of_speech-end':
        return this.#send({ type: 'voice-stopped', timestamp: timestamp(dataOf(event, 'end_of_speech-end').atS) });
      case 'stt-end':
        return this.#send({ type: 'transcript', text: dataOf(event, 'stt-end').text ?? '' });
      case 'error':
        return this.#send({ type: 'error', text: dataOf(event, 'error').message ?? 'failed', code: 'iris-error' });
      case 'run-end': {
        if (run.mode !== 'asr') return;
        // A satellite streams its command until told the words (`transcript`) or that there were none.
        const { outcome } = dataOf(event, 'run-end');
        if (outcome === 'no_speech') this.#send({ type: 'error', text: 'No speech was heard', code: 'stt-no-text-recognized' });
        else if (outcome === 'cancelled' && run.yielded) this.#send({ type: 'run-satellite' }); // back to its wake word, quietly
        return;
      }
      default:
    }
  }

  saying(text: string): void {
    this.#send({ type: 'synthesize', text });
  }

  listenFailed(why: ListenFailure): void {
    this.#send({ type: 'error', ...FAILURES[why] });
  }

  timerStarted(id: string, seconds: number, label: string): void {
    this.#send({ type: 'timer-started', id, total_seconds: seconds, ...(label === '' ? {} : { name: label }) });
  }

  timerFinished(id: string): void {
    this.#send({ type: 'timer-finished', id });
  }

  #send(message: Message): void {
    this.#connection.send(message);
  }
}
