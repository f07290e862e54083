/**
 * A room knows its satellite only through the link (src/satellite/link.ts): here a link that
 * speaks no protocol at all drives a real room — its voice loop with pocketsphinx and
 * espeak-ng, its announcer, the arbiter — as a new protocol's folder would. A timer the
 * room's conversation starts reaches the link as the timers tool's notice, after the reply.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { parseConfig } from '../src/config/load.js';
import { Arbiter } from '../src/daemon/arbiter.js';
import { Room } from '../src/daemon/room.js';
import { createLogger } from '../src/log.js';
import type { AudioSink } from '../src/pipeline/audio.js';
import { Engines } from '../src/pipeline/engines.js';
import type { VoiceEvent } from '../src/pipeline/events.js';
import type { LinkState, ListenFailure, RunContext, SatelliteEvents, SatelliteLink } from '../src/satellite/link.js';
import type { TurnResult } from '../src/conversation/types.js';
import { commandSamples } from './helpers/speech.js';

/** A satellite link of no protocol: it writes down what the room tells it. */
class PlainLink implements SatelliteLink {
  readonly uri = 'plain://den';
  state: LinkState = 'disconnected';
  lastError = '';
  readonly told: string[] = [];
  #idle: (() => void)[] = [];

  constructor(readonly events: SatelliteEvents) {}

  start(): void {
    this.state = 'connected';
    this.events.connected({ name: 'Den box', area: 'the den!', isSatellite: true });
  }

  stop(): Promise<void> {
    this.state = 'stopped';
    return Promise.resolve();
  }

  readonly speaker: AudioSink = {
    play: (wav) => {
      this.told.push(`audio ${wav.length > 44 ? 'some' : 'none'}`);
      return Promise.resolve();
    },
  };

  pipelineEvent(event: VoiceEvent, run: RunContext): void {
    if (event.type === 'run-end') for (const resolve of this.#idle.splice(0)) resolve();
    if (['wake-end', 'stt-end', 'run-end'].includes(event.type)) this.told.push(`${event.type} (${run.mode}${event.type === 'stt-end' ? `: ${String(event.data?.text)}` : ''})`);
  }

  saying(text: string): void {
    this.told.push(`saying ${text}`);
  }

  listenFailed(why: ListenFailure): void {
    this.told.push(`failed ${why}`);
  }

  timerStarted(id: string, seconds: number, label: string): void {
    this.told.push(`timer-started ${id} ${seconds} ${label}`);
  }

  timerFinished(id: string): void {
    this.told.push(`timer-finished ${id}`);
  }

  /** Resolves at the end of the next run. */
  runEnded(): Promise<void> {
    return new Promise((resolve) => this.#idle.push(resolve));
  }
}

const stops: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) await stop();
});

describe('a room fed by a link of any protocol', () => {
  it('takes a command the satellite heard the wake word for, answers through its speaker, and tells it the timer it started once the reply is said', async () => {
    const config = parseConfig('[assistant]\nfollow_up_s = 0\n[stt]\nengine = "pocketsphinx"\n', 'c');
    const log = createLogger('rooms', { write: () => undefined });
    const engines = new Engines(() => config, log);
    stops.push(() => engines.stop());
    const asked: string[] = [];
    let link: PlainLink | undefined;
    const room: Room = new Room('den', {
      config: () => config,
      log,
      respond: () => (text) => {
        asked.push(text);
        room.notify({ kind: 'timer-started', id: '7', seconds: 180, label: 'tea', room: 'den' }); // as the timers tool does mid-turn
        const reply = 'Tea timer set for 3 minutes.';
        return { sentences: (async function* () { await Promise.resolve(); yield reply; })(), result: Promise.resolve({ reply, route: 'local', tool_calls: [] } as unknown as TurnResult) };
      },
    }, { arbiter: new Arbiter(), readBeyond: () => true, reroute: () => undefined, settings: () => undefined, engines, listening: () => 1 }, (events) => (link = new PlainLink(events)));
    stops.push(() => room.stop());
    room.start();
    if (link === undefined) throw new Error('no link made');
    expect(room.status()).toMatchObject({ name: 'den', uri: 'plain://den', area: 'the den', state: 'connected', doing: 'idle' });

    const ended = link.runEnded();
    link.events.wakeDetected('hey_jarvis');
    link.events.runPipeline('asr', 'tts');
    link.events.audio(commandSamples('set a tea timer for three minutes', { padS: [0.2, 0.5] }));
    link.events.audioStopped();
    await ended;
    expect(asked).toEqual(['set a tea timer for three minutes']);
    const told = link.told;
    await vi.waitFor(() => expect(told).toHaveLength(6)); // the run's report comes just after its end
    expect(told).toEqual([
      'wake-end (asr)',
      'stt-end (asr: set a tea timer for three minutes)',
      'saying Tea timer set for 3 minutes.',
      'audio some',
      'run-end (asr)',
      'timer-started 7 180 tea',
    ]);
    expect(room.status()).toMatchObject({ mode: 'asr', last_transcript: 'set a tea timer for three minutes', doing: 'idle' });
  }, 60_000);
});
