/**
 * Finding satellites on the network (`[satellites] discover = true`): `avahi-browse -rpt
 * _wyoming._tcp` asks the machine's avahi-daemon (over D-Bus, a Unix socket: the hardened unit
 * needs no multicast) for every Wyoming endpoint it has seen, resolved. avahi-browse is the
 * well-kept client for that; IRIS only reads its parseable output. What the network announces
 * is untrusted: names are cleaned, addresses must be IP addresses, ports numbers. The watcher
 * browses once a minute while discovery is on, asks each new endpoint whether it is a satellite,
 * and tells the rooms what it found.
 */
import { execFile } from 'node:child_process';
import { isIP } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { messageOf } from '../errors.js';
import type { Logger } from '../log.js';
import { describeEndpoint } from '../wyoming/client.js';

export interface Discovered {
  /** The announced service name, unescaped ("Kitchen satellite"). */
  service: string;
  /** A room name made from it ("kitchen-satellite"). */
  name: string;
  host: string;
  address: string;
  port: number;
  uri: string;
}

const run = promisify(execFile);

/** How long one browse may take (ms): avahi answers from its cache at once. */
const BROWSE_TIMEOUT_MS = 10_000;

/** The resolved `_wyoming._tcp` services in avahi-browse's parseable (-p -r) output, one per address and port; IPv4 first. */
export function parseAvahiBrowse(output: string): Discovered[] {
  const found = new Map<string, Discovered>();
  const lines = output.split('\n').map((line) => line.split(';'));
  // "=;iface;IPv4|IPv6;name;type;domain;host;address;port;txt": resolved services only.
  const resolved = lines.filter((f) => f[0] === '=' && f.length >= 9 && f[4] === '_wyoming._tcp');
  resolved.sort((a, b) => (a[2] === b[2] ? 0 : a[2] === 'IPv4' ? -1 : 1));
  for (const f of resolved) {
    const [, , , label = '', , , host = '', rawAddress = '', portText = ''] = f;
    const address = rawAddress.replace(/%.*$/, ''); // an IPv6 zone ("fe80::1%eth0") cannot be reached as a URI
    const port = Number(portText);
    if (isIP(address) === 0 || !Number.isInteger(port) || port < 1 || port > 65535) continue;
    if (isIP(address) === 6 && address.toLowerCase().startsWith('fe80:')) continue; // link-local needs its zone
    const service = unescapeLabel(label);
    const uri = `tcp://${isIP(address) === 6 ? `[${address}]` : address}:${port}`;
    const key = `${service}\n${port}`;
    if (found.has(key)) continue; // the same service over IPv6 too
    found.set(key, { service, name: roomName(service), host, address, port, uri });
  }
  return [...found.values()];
}

/** avahi's escaped label: `\DDD` is a byte in decimal, `\X` is X. */
export function unescapeLabel(label: string): string {
  const bytes: number[] = [];
  for (let i = 0; i < label.length; i++) {
    const c = label[i] ?? '';
    const digits = /^\d{3}/.exec(label.slice(i + 1, i + 4))?.[0];
    if (c === '\\' && digits !== undefined) {
      bytes.push(Number(digits) & 0xff);
      i += 3;
    } else if (c === '\\' && i + 1 < label.length) {
      bytes.push(...Buffer.from(label[i + 1] ?? ''));
      i += 1;
    } else bytes.push(...Buffer.from(c));
  }
  return Buffer.from(bytes).toString('utf8');
}

/** A config-style room name from an announced one: lower case, letters, digits and "-" (as `[satellites.NAME]` takes). */
export function roomName(service: string): string {
  return service.normalize('NFKD').replace(/\p{M}/gu, '').toLowerCase().replace(/[^a-z0-9_.-]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 60) || 'satellite';
}

/** Browse once; a missing avahi-browse or avahi-daemon is an error that says what to install. */
export async function browseWyoming(signal?: AbortSignal): Promise<Discovered[]> {
  try {
    const { stdout } = await run('avahi-browse', ['-rpt', '_wyoming._tcp'], { timeout: BROWSE_TIMEOUT_MS, ...(signal ? { signal } : {}), maxBuffer: 1024 * 1024 });
    return parseAvahiBrowse(stdout);
  } catch (error) {
    const e = error as NodeJS.ErrnoException & { stderr?: string };
    if (e.code === 'ENOENT') throw new Error('avahi-browse is not installed (apt install avahi-utils avahi-daemon)', { cause: error });
    throw new Error(`avahi-browse failed: ${e.stderr?.trim().split('\n').pop() ?? e.message}`, { cause: error });
  }
}

export interface WatcherOptions {
  log: Logger;
  /** Whether to go on browsing (`[satellites] discover`), asked before each browse. */
  enabled: () => boolean;
  /** Whether the room `name` is connected: a satellite that stops announcing itself stays while it is (mDNS comes and goes). */
  connected: (name: string) => boolean;
  /** What was found changed (read `found`). */
  onChange: () => void;
  /** Find endpoints; default avahi-browse. */
  browse?: (signal: AbortSignal) => Promise<Discovered[]>;
  /** Browse this often (ms); default a minute. */
  everyMs?: number;
}

/** Satellites on the network, browsed for while discovery is on. */
export class SatelliteWatcher {
  readonly #o: WatcherOptions;
  /** Satellites found, by room name. */
  #found = new Map<string, Discovered>();
  /** Endpoints found that are not satellites (Wyoming services, IRIS itself): not asked again. */
  readonly #notSatellites = new Set<string>();
  readonly #stopping = new AbortController();
  #browsing: Promise<void> | undefined;

  constructor(options: WatcherOptions) {
    this.#o = options;
  }

  get found(): Discovered[] {
    return [...this.#found.values()];
  }

  /** Browse (in the background) until stopped or discovery is switched off; again when started after that. */
  start(): void {
    this.#browsing ??= this.#watch();
  }

  async stop(): Promise<void> {
    this.#stopping.abort(new Error('stopping'));
    await this.#browsing; // quick: the browse and each describe follow the stop signal
  }

  async #watch(): Promise<void> {
    const log = this.#o.log;
    const signal = this.#stopping.signal;
    let said = '';
    while (!signal.aborted && this.#o.enabled()) {
      try {
        const found = await (this.#o.browse ?? browseWyoming)(signal);
        said = '';
        const next = new Map<string, Discovered>();
        for (const d of found) {
          if (signal.aborted) break;
          if (this.#notSatellites.has(d.uri)) continue;
          const known = [...this.#found.values()].some((k) => k.uri === d.uri);
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
        for (const [name, d] of this.#found) if (!next.has(name) && this.#o.connected(name)) next.set(name, d);
        this.#found = next;
        this.#o.onChange();
      } catch (error) {
        if (messageOf(error) !== said) log.warn(`discovery: ${messageOf(error)}`); // said once, not every minute
        said = messageOf(error);
      }
      await sleep(this.#o.everyMs ?? 60_000, undefined, { signal }).catch(() => undefined);
    }
    this.#browsing = undefined;
  }
}
