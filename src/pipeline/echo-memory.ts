/**
 * The room's echo, remembered across restarts. A linear canceller learns the room from IRIS's
 * voice, and after a start it has heard none: in IRIS's first reply it took ~7 dB of the echo in
 * its first 2 s, against ~30 once it had heard a minute, so "stop" said then was never heard.
 * What is kept is the room's response, solved by least squares from what IRIS played and the
 * microphone heard (room-response.ts); after a start it is placed by the first delay estimate and
 * taken off the microphone before the adaptive filter: 29–31 dB from the placing on (docs/room.md,
 * "The room's response by least squares"). Until session 22 a fresh speexdsp filter was taught
 * the taps speexdsp itself reads out (~12 dB of the room; primed, 17–19 dB).
 *
 * What is kept is the response, the delay and the speaker's clip level: no sound of the room.
 * The file is the canceller's alone; one that does not fit (another filter, another version,
 * damaged) is not used, and the next one learned replaces it.
 */
import { readFile, rm } from 'node:fs/promises';
import type { Logger } from '../log.js';
import { createJsonStore } from '../toolhost/store.js';
import { messageOf } from '../errors.js';

/** What a canceller learned of its room (`EchoCanceller.learned`, `EchoCancellerOptions.remembered`). */
export interface RoomEcho {
  /** The room's response, one tap per sample (1 = the reference as it is), the reference aligned `MARGIN` early: the filter's length. */
  taps: Float32Array;
  /** Speaker to microphone, as last measured (ms): told in the log; each start measures it again (live it moved 142–153 ms from one start to the next, and a filter placed 6 ms off took nothing). */
  delayMs: number;
  /** The level the speaker clipped at (`clipModel`), if it did. */
  clipLevel?: number;
  /** Seconds of IRIS the canceller had heard. */
  heardS: number;
}

/** `taps` applied to `x` (the echo of `x` in the remembered room). */
export function convolve(x: Int16Array, taps: Float32Array): Int16Array {
  let last = taps.length;
  while (last > 0 && taps[last - 1] === 0) last--;
  const y = new Int16Array(x.length);
  for (let i = 0; i < x.length; i++) {
    let sum = 0;
    const top = Math.min(last - 1, i);
    for (let k = 0; k <= top; k++) sum += (taps[k] as number) * (x[i - k] as number);
    y[i] = Math.max(-32768, Math.min(32767, Math.round(sum)));
  }
  return y;
}

/** Taps of the remembered room's echo used to place it (`throughRoom`): its strongest this-many in a row. */
const PLACING_TAPS = 512;

/**
 * `ref` through the remembered room, `advance` samples early (the filter's margin): the echo a
 * filter primed from `taps` predicts with the delay at 0. Where the microphone matches it best is
 * the delay that filter fits at. Only the strongest `PLACING_TAPS` in a row are used (the echo's
 * direct part and first reflections: a twelfth of the work of all 6144; ~20 ms once, on the audio path).
 */
export function throughRoom(ref: Int16Array, taps: Float32Array, advance: number): Int16Array {
  let best = 0;
  let bestEnergy = -1;
  let sum = 0;
  for (let k = 0; k < taps.length; k++) {
    sum += (taps[k] as number) ** 2 - (k >= PLACING_TAPS ? (taps[k - PLACING_TAPS] as number) ** 2 : 0);
    if (k >= PLACING_TAPS - 1 && sum > bestEnergy) [bestEnergy, best] = [sum, k - PLACING_TAPS + 1];
  }
  // echo[n] = Σ taps[best + k] · ref[n + advance − best − k]: the span's echo of `ref`, read advance − best later.
  const shift = advance - best;
  const padded = new Int16Array(ref.length + Math.max(0, shift));
  padded.set(ref);
  const heard = convolve(padded, taps.subarray(best, best + PLACING_TAPS));
  const echo = new Int16Array(ref.length);
  if (shift >= 0) echo.set(heard.subarray(shift, shift + ref.length));
  else echo.set(heard.subarray(0, ref.length + shift), -shift);
  return echo;
}

/** 2: the least-squares response (session 22); 1 held speexdsp's read-out, not used again (the next one learned replaces it). */
const VERSION = 2;

interface Stored {
  version: number;
  delay_ms: number;
  clip_level?: number;
  heard_s: number;
  /** Float32 little-endian, base64. */
  taps: string;
}

/** Whether `path` holds a room's echo of an older version than this IRIS writes. */
async function olderVersion(path: string): Promise<boolean> {
  try {
    const version = (JSON.parse(await readFile(path, 'utf8')) as { version?: unknown }).version;
    return typeof version === 'number' && version < VERSION;
  } catch {
    return false;
  }
}

export interface RoomEchoFile {
  load(): Promise<RoomEcho | undefined>;
  save(room: RoomEcho): Promise<void>;
}

/** `echo-room.json` in the state dir. A file that cannot be read is logged and not used. */
export function roomEchoFile(stateDir: string, log: Logger): RoomEchoFile {
  const open = () => createJsonStore<Stored>(stateDir, 'echo-room', log, VERSION, { mode: 0o600 });
  let store = open();
  return {
    async load() {
      try {
        const stored = await store.read();
        if (!stored) return undefined;
        const bytes = Buffer.from(stored.taps, 'base64');
        const ok = Number.isFinite(stored.delay_ms) && stored.delay_ms >= 0 && Number.isFinite(stored.heard_s) && bytes.length > 0 && bytes.length % 4 === 0;
        const taps = ok ? new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length)) : undefined;
        if (!taps || !taps.every((t) => Number.isFinite(t) && Math.abs(t) < 64)) {
          log.warn(`${store.path} is not a room's echo IRIS can use; the canceller starts fresh`);
          return undefined;
        }
        return { taps, delayMs: stored.delay_ms, heardS: stored.heard_s, ...(stored.clip_level === undefined ? {} : { clipLevel: stored.clip_level }) };
      } catch (error) {
        if (await olderVersion(store.path)) {
          // An older IRIS's description of the room: this one learns it again and writes its own.
          await rm(store.path, { force: true });
          store = open();
          log.info(`${store.path} was kept by an older IRIS; the room's echo is learned again`);
          return undefined;
        }
        log.warn(`the room's echo could not be read (${messageOf(error)}); the canceller starts fresh`);
        return undefined;
      }
    },
    async save(room) {
      const bytes = Buffer.from(room.taps.buffer, room.taps.byteOffset, room.taps.byteLength);
      await store.write({ version: VERSION, delay_ms: room.delayMs, heard_s: room.heardS, ...(room.clipLevel === undefined ? {} : { clip_level: room.clipLevel }), taps: bytes.toString('base64') });
    },
  };
}
