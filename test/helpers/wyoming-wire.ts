/**
 * The Wyoming wire format as the test peers speak it, written from the protocol's own
 * description (shared/notes/wyoming.md §1; the `wyoming` library's event.py read, not copied)
 * and independent of IRIS's codec (src/wyoming/events.ts), so a peer never shares IRIS's
 * mistakes:
 *
 * - a header line: one JSON object and `\n`, keys in the reference writer's order — `type`,
 *   `version`, then `data_length` when there is data, `payload_length` when there is a payload —
 *   printed as Python's `json.dumps` prints it (`", "` and `": "` between items, non-ASCII kept);
 * - then `data_length` bytes of JSON data, merged over the header's own `data` when reading;
 * - then `payload_length` bytes of payload.
 */

export interface PeerEvent {
  type: string;
  data: Record<string, unknown>;
  payload?: Buffer;
}

/** The library version the peers claim: wyoming-satellite 1.4.1 runs on wyoming 1.5.4, Home Assistant on 1.9. */
export const SATELLITE_VERSION = '1.5.4';
export const HA_VERSION = '1.9.0';

/** JSON as Python's json.dumps(value, ensure_ascii=False) writes it: ", " and ": " separators. */
export function pythonJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(pythonJson).join(', ')}]`;
  return `{${Object.entries(value).filter(([, v]) => v !== undefined).map(([k, v]) => `${JSON.stringify(k)}: ${pythonJson(v)}`).join(', ')}}`;
}

/** One event as the reference writer puts it on the wire. */
export function eventBytes(event: PeerEvent, version = HA_VERSION): Buffer {
  const header: Record<string, unknown> = { type: event.type, version };
  const hasData = Object.keys(event.data).length > 0;
  const data = hasData ? Buffer.from(pythonJson(event.data), 'utf8') : undefined;
  if (data !== undefined) header.data_length = data.length;
  const hasPayload = event.payload !== undefined && event.payload.length > 0;
  if (hasPayload) header.payload_length = event.payload?.length;
  return Buffer.concat([Buffer.from(`${pythonJson(header)}\n`, 'utf8'), ...(data ? [data] : []), ...(hasPayload && event.payload ? [event.payload] : [])]);
}

/**
 * Reads events from a byte stream however it is split: `push` takes what arrived and returns
 * the events it completed. A header that is not a JSON object with a `type`, or a length that is
 * not a whole number, throws: the peer closes, as the library's reader gives up on the stream.
 */
export class WireReader {
  #bytes: Buffer = Buffer.alloc(0);
  #header: { type: string; data: Record<string, unknown>; dataLength: number; payloadLength: number } | undefined;

  push(chunk: Buffer): PeerEvent[] {
    this.#bytes = this.#bytes.length === 0 ? chunk : Buffer.concat([this.#bytes, chunk]);
    const out: PeerEvent[] = [];
    for (;;) {
      if (this.#header === undefined) {
        const end = this.#bytes.indexOf(0x0a);
        if (end < 0) return out;
        this.#header = parseHeader(this.#bytes.subarray(0, end).toString('utf8'));
        this.#bytes = this.#bytes.subarray(end + 1);
      }
      const { type, data, dataLength, payloadLength } = this.#header;
      if (this.#bytes.length < dataLength + payloadLength) return out;
      const merged = dataLength > 0 ? { ...data, ...(JSON.parse(this.#bytes.subarray(0, dataLength).toString('utf8')) as Record<string, unknown>) } : data;
      const event: PeerEvent = { type, data: merged };
      if (payloadLength > 0) event.payload = Buffer.from(this.#bytes.subarray(dataLength, dataLength + payloadLength));
      this.#bytes = this.#bytes.subarray(dataLength + payloadLength);
      this.#header = undefined;
      out.push(event);
    }
  }
}

function parseHeader(line: string): { type: string; data: Record<string, unknown>; dataLength: number; payloadLength: number } {
  const header = JSON.parse(line) as Record<string, unknown>;
  if (typeof header !== 'object' || header === null || typeof header.type !== 'string') throw new Error(`not a Wyoming header: ${line.slice(0, 80)}`);
  const length = (key: string): number => {
    const n = header[key] ?? 0;
    if (typeof n !== 'number' || !Number.isInteger(n) || n < 0) throw new Error(`"${key}" is not a length: ${line.slice(0, 80)}`);
    return n;
  };
  const data = (header.data ?? {}) as Record<string, unknown>;
  return { type: header.type, data: { ...data }, dataLength: length('data_length'), payloadLength: length('payload_length') };
}
