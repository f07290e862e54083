/**
 * Timers and reminders said aloud, each saying a run of the pipeline from speech to speech
 * (pipeline.ts). An announcement waits until the voice loop is idle (never
 * over a reply or while a command is being spoken), then is repeated every `announce_every_s`
 * up to `announce_repeats` times, unless the wake word acknowledges it first — which also
 * stops one being said.
 */
import type { Config } from '../config/schema.js';
import { messageOf } from '../errors.js';
import type { Logger } from '../log.js';
import type { AudioSink } from '../pipeline/audio.js';
import { runPipeline } from '../pipeline/pipeline.js';
import type { TextToSpeech } from '../pipeline/tts.js';
import type { Announcement } from '../toolhost/api.js';

export interface AnnouncerOptions {
  tts: TextToSpeech;
  sink: AudioSink;
  /** True when nothing else is being said or heard. */
  isIdle: () => boolean;
  config: () => Config;
  log: Logger;
}

interface Entry {
  announcement: Announcement;
  /** How many times to say it in all. */
  times: number;
  left: number;
  dueAt: number;
  /** Said (or being said) at least once: the wake word now acknowledges it. */
  said: boolean;
}

/** How often a waiting announcement checks whether the loop is idle (ms). */
const IDLE_POLL_MS = 250;

export class Announcer {
  readonly #o: AnnouncerOptions;
  #queue: Entry[] = [];
  #timer: NodeJS.Timeout | undefined;
  #speaking: AbortController | undefined;
  #stopped = false;

  constructor(options: AnnouncerOptions) {
    this.#o = options;
  }

  /** Announcements still to be said (or repeated). */
  get pending(): number {
    return this.#queue.length;
  }

  announce(announcement: Announcement): void {
    const { audio } = this.#o.config();
    this.#o.log.info(`${announcement.kind} #${announcement.id}: ${announcement.text}`);
    const times = announcement.kind === 'missed' ? 1 : audio.announce_repeats;
    this.#queue.push({ announcement, times, left: times, dueAt: Date.now(), said: false });
    this.#schedule(0);
  }

  /** The wake word was heard: everything said so far counts as heard; stop talking. */
  acknowledge(): void {
    const heard = this.#queue.filter((e) => e.said);
    if (heard.length === 0) return;
    this.#o.log.info(`acknowledged: ${heard.map((e) => `#${e.announcement.id}`).join(', ')}`);
    this.#queue = this.#queue.filter((e) => !e.said);
    this.#speaking?.abort(new DOMException('acknowledged', 'AbortError'));
  }

  /** Stop talking; returns what was still to be said, for an announcer that takes over. */
  stop(): Announcement[] {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#speaking?.abort(new DOMException('stopping', 'AbortError'));
    return this.#queue.map((e) => e.announcement);
  }

  #schedule(ms: number): void {
    if (this.#stopped) return;
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => void this.#pump(), ms);
    this.#timer.unref();
  }

  async #pump(): Promise<void> {
    if (this.#speaking || this.#queue.length === 0) return;
    const now = Date.now();
    const next = this.#queue.reduce((a, b) => (b.dueAt < a.dueAt ? b : a));
    if (next.dueAt > now) return this.#schedule(next.dueAt - now);
    if (!this.#o.isIdle()) return this.#schedule(IDLE_POLL_MS);
    const controller = new AbortController();
    this.#speaking = controller;
    next.said = true;
    let failure: unknown;
    try {
      await runPipeline({ text: next.announcement.text }, { start: 'tts', end: 'tts', tts: this.#o.tts, sink: this.#o.sink, signal: controller.signal });
    } catch (error) {
      failure = error;
    } finally {
      this.#speaking = undefined;
    }
    if (controller.signal.aborted) return this.#schedule(0); // acknowledged: already dropped
    next.left -= 1;
    // The log says what happened: a speaker that fails (`[audio] output = ""`) said nothing.
    const which = `${next.announcement.kind} #${next.announcement.id} (${next.times - next.left} of ${next.times})`;
    if (failure === undefined) this.#o.log.info(`said ${which}`);
    else this.#o.log.warn(`could not say ${which}: ${messageOf(failure)}`);
    next.dueAt = Date.now() + this.#o.config().audio.announce_every_s * 1000;
    if (next.left <= 0) this.#queue = this.#queue.filter((e) => e !== next);
    this.#schedule(0);
  }
}
