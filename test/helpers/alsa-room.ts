/**
 * A room on real ALSA devices with no sound card: a private ALSA config (ALSA_CONFIG_PATH, never
 * the host's) with a speaker `spk` and a microphone `mic`, both alsa-lib's `file` plugin over a
 * `null` slave, each on a FIFO this helper serves in real time. alsa-lib 1.2.8's null slave paces
 * neither stream (aplay writes a clip in a few ms, arecord reads as fast as data comes), so:
 * - the speaker's FIFO is shrunk to one page (F_SETPIPE_SZ, 4096 bytes) and read here at 22.05 kHz
 *   (the speaker stream's rate, so alsa-lib converts no rate). `spk` widens it to 8 channels of
 *   S32 (32 bytes a frame), so aplay is held at most 128 frames (6 ms) ahead of the sound beyond
 *   what alsa-lib's file plugin keeps back (a buffer's worth, ALSA's buffer as aplay asked for
 *   it: as a card holds its buffer). The daemon keeps one aplay open and writes silence between
 *   clips (pipeline/player.ts): the sound runs on while it is open. An aplay of its own per clip
 *   (`aplaySink`) starts a new sound where its first bytes come and ends when it exits;
 *   The microphone hears it band-limited to 16 kHz here (windowed-sinc interpolation), as a DAC
 *   and an ADC would: through alsa-lib's linear rate converter, its images left speexdsp 10 dB of
 *   echo removal where a band-limited resampling leaves 23;
 * - the microphone is written here every 80 ms, in whole blocks of arecord's period (1280
 *   frames: a read shorter than arecord asks for is padded by the plugin with garbage), each
 *   block the room as it sounded up to that moment: the speaker `delayMs` late at `gain` through
 *   two early reflections, the person, and a noise floor.
 */
import { closeSync, constants, mkdirSync, openSync, readSync, writeFileSync } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import koffi from 'koffi';

const RATE = 16_000;
/** The speaker's rate. */
const SPEAKER_RATE = 22_050;
/** arecord's period: 80 ms, as IRIS asks for (capture.ts `arecordArgs`). */
const BLOCK = 1280;
/** `spk`'s frame: 8 channels × S32_LE. */
const FRAME_BYTES = 32;
const TICK_MS = 5;
const F_SETPIPE_SZ = 1031;
/** The room's first reflections after the direct echo: [delay in samples, gain]. */
const REFLECTIONS: [number, number][] = [[0, 1], [96, 0.35], [210, 0.18]];
/** Band-limited interpolation from the speaker's rate to 16 kHz: a Hann-windowed sinc, cut at 7.2 kHz, 16 speaker samples each side. */
const SINC_HALF = 16;
const CUTOFF = (2 * 7_200) / SPEAKER_RATE;
function sincTap(d: number): number {
  if (Math.abs(d) >= SINC_HALF) return 0;
  const x = Math.PI * CUTOFF * d;
  return CUTOFF * (d === 0 ? 1 : Math.sin(x) / x) * (0.5 + 0.5 * Math.cos((Math.PI * d) / SINC_HALF));
}

export class AlsaRoom {
  /** The environment that points alsa-lib (aplay, arecord) at this room's config. */
  readonly env: { ALSA_CONFIG_PATH: string };
  /** What the speaker sounded (at its rate) and what the person said, by room sample (the helper's clock). */
  readonly #speaker = new Float32Array(SPEAKER_RATE * 60);
  readonly #person = new Float32Array(RATE * 60);
  readonly #origin = performance.now();
  readonly #micFifo: string;
  readonly #speakerFd: number;
  readonly #timer: NodeJS.Timeout;
  readonly #buffer = Buffer.alloc(4096);
  /** Bytes read from the speaker that end mid-frame. */
  #odd = Buffer.alloc(0);
  /** The speaker sample (the room's clock at the speaker's rate) the next one read sounds at. */
  #playhead = 0;
  /** No aplay had the speaker open at the last read: what comes next starts a new sound. */
  #idle = true;
  /** The room sample after the last microphone block written. */
  #written = 0;
  #closed = false;
  readonly #serving: Promise<void>;

  constructor(dir: string, readonly delayMs: number, readonly gain: number) {
    mkdirSync(dir, { recursive: true });
    const speakerFifo = join(dir, 'speaker.fifo');
    this.#micFifo = join(dir, 'mic.fifo');
    execFileSync('mkfifo', [speakerFifo, this.#micFifo]);
    // Held open for reading: aplay's open never waits, the pipe (with its size) lives on between
    // clips, and a read tells a clip that ended (no writer: 0 bytes) from one still coming (EAGAIN).
    this.#speakerFd = openSync(speakerFifo, constants.O_RDONLY | constants.O_NONBLOCK);
    const fcntl = koffi.load('libc.so.6').func('int fcntl(int fd, int cmd, ...)');
    if ((fcntl(this.#speakerFd, F_SETPIPE_SZ, 'int', 4096) as number) < 0) throw new Error('cannot shrink the speaker FIFO');
    const config = join(dir, 'asound.conf');
    writeFileSync(config, [
      `pcm.spkfile { type file; slave.pcm { type null }; file "${speakerFifo}"; format "raw" }`,
      `pcm.spk { type plug; slave { pcm "spkfile"; rate ${SPEAKER_RATE}; channels ${FRAME_BYTES / 4}; format S32_LE } }`,
      `pcm.mic { type file; slave.pcm { type null }; file "/dev/null"; infile "${this.#micFifo}"; format "raw" }`,
      '',
    ].join('\n'));
    this.env = { ALSA_CONFIG_PATH: config };
    this.#timer = setInterval(() => this.#listen(), TICK_MS);
    this.#serving = this.#serveMicrophone();
  }

  /** The room's clock: samples (16 kHz) since it was made. */
  now(): number {
    return Math.round(((performance.now() - this.#origin) * RATE) / 1000);
  }

  /** The clock in speaker samples. */
  #speakerNow(): number {
    return Math.round(((performance.now() - this.#origin) * SPEAKER_RATE) / 1000);
  }

  /** The person says `samples` a moment from now; the room sample where the words end. */
  say(samples: Int16Array): number {
    const at = Math.max(this.now(), this.#written) + RATE / 10;
    this.#person.set(Float32Array.from(samples), at);
    return at + samples.length;
  }

  /** Seconds the speaker sounded (above a whisper) between room samples `from` and `to`. */
  soundedS(from = 0, to = this.now()): number {
    let n = 0;
    for (let k = Math.round((from * SPEAKER_RATE) / RATE); k < Math.round((to * SPEAKER_RATE) / RATE); k++) if (Math.abs(this.#speaker[k] ?? 0) > 30) n++;
    return n / SPEAKER_RATE;
  }

  /** The speaker's sample index at live clock sample `clock` (EchoReference.nowSamples: performance.now() at 16 kHz). */
  #speakerIndex(clock: number): number {
    return ((clock / 16 - this.#origin) * SPEAKER_RATE) / 1000;
  }

  /**
   * Where the speaker first sounded above `level` (16-bit scale) in live clock samples
   * [`from`, `to`): the clock sample (fractional, to a speaker sample), or undefined.
   * `last`: where it last did instead.
   */
  soundAt(from: number, to: number, { level = 100, last = false } = {}): number | undefined {
    const start = Math.max(0, Math.ceil(this.#speakerIndex(from)));
    const end = Math.min(this.#speaker.length, Math.floor(this.#speakerIndex(to)));
    const loud = (k: number): boolean => Math.abs(this.#speaker[k] ?? 0) > level;
    let found: number | undefined;
    if (last) for (let k = end - 1; k >= start && found === undefined; k--) { if (loud(k)) found = k; }
    else for (let k = start; k < end && found === undefined; k++) { if (loud(k)) found = k; }
    return found === undefined ? undefined : ((found * 1000) / SPEAKER_RATE + this.#origin) * 16;
  }

  /** The speaker at room sample `t` (16 kHz), band-limited. */
  #heard(t: number): number {
    const u = (t * SPEAKER_RATE) / RATE;
    let sum = 0;
    for (let k = Math.ceil(u - SINC_HALF); k < u + SINC_HALF; k++) sum += sincTap(u - k) * (this.#speaker[k] ?? 0);
    return sum;
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#timer);
    // A microphone open still waiting for a reader (the daemon is gone): let it through.
    try {
      closeSync(openSync(this.#micFifo, constants.O_RDONLY | constants.O_NONBLOCK));
    } catch { /* nobody waiting */ }
    await this.#serving;
    closeSync(this.#speakerFd);
  }

  /** Take from the speaker's FIFO what has sounded by now. */
  #listen(): void {
    const now = this.#speakerNow();
    while (this.#playhead < now) {
      let bytes: number;
      try {
        bytes = readSync(this.#speakerFd, this.#buffer, 0, Math.min(this.#buffer.length, (now - this.#playhead) * FRAME_BYTES), null);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'EAGAIN') return; // aplay is on it (or starting): the sound goes on
        throw error;
      }
      if (bytes === 0) {
        this.#idle = true; // no aplay: the clip has ended
        return;
      }
      // A new clip after silence starts when it came (within this tick), not where the last one ended.
      if (this.#idle) this.#playhead = Math.max(this.#playhead, now - Math.round((TICK_MS * SPEAKER_RATE) / 2000));
      this.#idle = false;
      const data = Buffer.concat([this.#odd, this.#buffer.subarray(0, bytes)]);
      const frames = Math.floor(data.length / FRAME_BYTES);
      for (let i = 0; i < frames && this.#playhead + i < this.#speaker.length; i++) this.#speaker[this.#playhead + i] = data.readInt32LE(i * FRAME_BYTES) / 65536; // channel 0
      this.#odd = data.subarray(frames * FRAME_BYTES);
      this.#playhead += frames;
    }
  }

  /** Serve each arecord that opens `mic`, one 80 ms block at a time, as the room sounds. */
  async #serveMicrophone(): Promise<void> {
    while (!this.#closed) {
      let handle: FileHandle;
      try {
        handle = await open(this.#micFifo, 'w'); // waits for a reader
      } catch (error) {
        if (this.#closed) return;
        throw error;
      }
      try {
        for (let end = this.now(); !this.#closed; end += BLOCK) {
          const waitMs = ((end - this.now()) * 1000) / RATE;
          if (waitMs > 0) await sleep(waitMs);
          this.#listen();
          await handle.write(this.#block(end - BLOCK));
          this.#written = end;
        }
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EPIPE') throw error; // else the reader closed: wait for the next
      } finally {
        await handle.close();
      }
    }
  }

  /** The microphone's samples [from, from + BLOCK), as S16_LE. */
  #block(from: number): Buffer {
    const out = Buffer.alloc(BLOCK * 2);
    const delay = Math.round((this.delayMs * RATE) / 1000);
    let seed = from;
    for (let i = 0; i < BLOCK; i++) {
      const t = from + i;
      let echo = 0;
      for (const [lag, g] of REFLECTIONS) echo += g * this.#heard(t - delay - lag);
      seed = (Math.imul(seed, 1103515245) + 12345) & 0x7fffffff;
      const noise = ((seed / 0x7fffffff) - 0.5) * 60; // about -60 dBFS
      out.writeInt16LE(Math.max(-32768, Math.min(32767, Math.round(this.gain * echo + (this.#person[t] ?? 0) + noise))), i * 2);
    }
    return out;
  }
}
