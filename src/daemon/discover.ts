/**
 * Finding satellites on the network (`[satellites] discover = true`): `avahi-browse -rpt
 * _wyoming._tcp` asks the machine's avahi-daemon (over D-Bus, a Unix socket: the hardened unit
 * needs no multicast) for every Wyoming endpoint it has seen, resolved. avahi-browse is the
 * well-kept client for that; IRIS only reads its parseable output. What the network announces
 * is untrusted: names are cleaned, addresses must be IP addresses, ports numbers.
 */
import { execFile } from 'node:child_process';
import { isIP } from 'node:net';
import { promisify } from 'node:util';

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
