/**
 * The rooms: IRIS as the brain of satellites (notes/wyoming.md §4). Each `[satellites.NAME]`,
 * and each satellite discovery finds (discover.ts), is a room (room.ts) with a link to its
 * satellite in that satellite's protocol (`LINKS`); this registry keeps them in step with the
 * config, shares the arbiter (arbiter.ts) and the engines between them, and routes
 * announcements and tools' notices to the room they belong to.
 */
import type { Config } from '../config/schema.js';
import { satelliteRooms } from '../config/schema.js';
import type { Logger } from '../log.js';
import { Engines } from '../pipeline/engines.js';
import type { Responder } from '../pipeline/voice.js';
import type { LinkOptions, SatelliteLink } from '../satellite/link.js';
import type { Announcement, Notice } from '../toolhost/api.js';
import type { TurnResult } from '../conversation/types.js';
import { WyomingSatellite } from '../wyoming/satellite.js';
import { Arbiter } from './arbiter.js';
import { SatelliteWatcher, type Discovered } from './discover.js';
import { Room, type RoomDeps, type RoomStatus } from './room.js';

export type { RoomStatus } from './room.js';

/**
 * Each satellite protocol's link, by the scheme of the room's `uri`: another protocol is a
 * folder beside wyoming/ implementing satellite/link.ts, and one line here.
 */
const LINKS: Record<string, (options: LinkOptions) => SatelliteLink> = {
  'tcp:': (options) => new WyomingSatellite(options),
};

/** The link for a room at `options.uri`, in the protocol its scheme names. */
function linkFor(options: LinkOptions): SatelliteLink {
  const scheme = /^[a-z][a-z0-9+.-]*:/i.exec(options.uri)?.[0].toLowerCase() ?? '';
  const make = Object.hasOwn(LINKS, scheme) ? LINKS[scheme] : undefined;
  if (make === undefined) throw new Error(`no satellite protocol for "${options.uri}" (${Object.keys(LINKS).join(', ')})`);
  return make(options);
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

/** Every configured room, kept in step with the config. */
export class Rooms {
  readonly #o: RoomsOptions;
  readonly #rooms = new Map<string, Room>();
  readonly #arbiter = new Arbiter();
  readonly #engines: Engines;
  readonly #watcher: SatelliteWatcher;
  readonly #stopping = new AbortController();

  constructor(options: RoomsOptions) {
    this.#o = options;
    this.#engines = options.engines ?? new Engines(options.config, options.log);
    this.#watcher = new SatelliteWatcher({
      log: options.log.child('discover'),
      enabled: () => this.#o.config().satellites.discover === true,
      connected: (name) => this.#rooms.get(name)?.connected === true,
      onChange: () => this.reconfigure(),
      ...(options.browse === undefined ? {} : { browse: options.browse }),
      ...(options.browseEveryMs === undefined ? {} : { everyMs: options.browseEveryMs }),
    });
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
    const found = discover ? this.#watcher.found.filter((d) => !taken.has(d.name) && !taken.has(d.uri)).map((d): [string, { uri: string }] => [d.name, { uri: d.uri }]) : [];
    const wanted: [string, { uri: string }][] = [...configured, ...found];
    if (discover && !this.#stopping.signal.aborted) this.#watcher.start();
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
    for (const [name, { uri }] of wanted) {
      if (this.#rooms.has(name)) continue;
      const retry = this.#o.retryMs === undefined ? {} : { retryMs: this.#o.retryMs };
      const room = new Room(name, this.#o, this.#deps(), (events, log) => linkFor({ uri, log, events, ...retry }));
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

  /** A tool's notice (a timer started) for the room it came from; one from no room, or a room gone, is nobody's. */
  notify(notice: Notice): void {
    if (notice.room !== undefined) this.#rooms.get(notice.room)?.notify(notice);
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
    await this.#watcher.stop();
    this.#arbiter.stop();
    const unsaid = await Promise.all([...this.#rooms.values()].map((room) => room.stop()));
    this.#rooms.clear();
    if (this.#o.engines === undefined) await this.#engines.stop(); // shared engines are their owner's to stop
    return unsaid.flat();
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
