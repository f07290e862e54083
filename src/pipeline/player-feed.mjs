// @ts-check
/**
 * The speaker stream's feeder thread (pipeline/player.ts): it owns one long-lived aplay and
 * writes it raw PCM in real time, silence between clips, so every clip shares one timeline. It
 * runs on a thread of its own because the daemon's own thread is blocked for tens to hundreds
 * of ms at a time (the recogniser decodes synchronously): with ALSA's buffer kept small (for a
 * fast stop), a write that waited for that thread would underrun the device, and every
 * underrun moves the timeline. Plain JavaScript so that Node runs it as it is, from the source
 * tree, the tests and the bundle's folder alike.
 *
 * Stream frame k is written at `anchor + k / rate - lead` (epoch ms, performance.timeOrigin +
 * performance.now()). What sounds then lags the timeline by what is queued: the pipe to aplay
 * and ALSA's buffer. ALSA's is fixed; the pipe is kept near the lead: it is a pipe of our own
 * (so its unread bytes can be counted, FIONREAD), and whatever piles up beyond the lead (aplay
 * late to start, a device slower than this clock) is taken out of the silence between clips by
 * skipping frames. So a clip sounds the same time after its place on the timeline in every
 * stream, whenever aplay started.
 *
 * In:  {type: 'clip', id, at, pcm}  (stream frame, Int16Array at the stream's rate; mixed)
 *      {type: 'drop', id}           (what is not written yet is never played)
 *      {type: 'close'}              (aplay plays what it has, then exits)
 *      {type: 'kill'}               (stop now)
 * Out: {type: 'spawned', pid}, {type: 'ready', anchor, bufferFrames, periodFrames},
 *      {type: 'ended', id, end}, {type: 'dropped', id, end} (end: the first frame not played),
 *      {type: 'skipped', frames}, {type: 'underrun', text}, {type: 'error', code, message},
 *      {type: 'exit', code, signal, stderr}
 */
import { spawn } from 'node:child_process';
import { closeSync, writeSync } from 'node:fs';
import { createRequire } from 'node:module';
import { parentPort, workerData } from 'node:worker_threads';

/** @type {{ command: string, args: string[], rate: number, leadFrames: number, slackFrames: number, windowMs: number, tickMs: number, primeFrames: number }} */
const options = workerData;
/** Linux's values (x86-64 and arm64 alike). */
const O_CLOEXEC = 0o2000000;
const O_NONBLOCK = 0o4000;
const F_SETFL = 4;
const FIONREAD = 0x541b;

const port = /** @type {import('node:worker_threads').MessagePort} */ (parentPort);
const now = () => performance.timeOrigin + performance.now();

/** @type {{ id: number, at: number, pcm: Int16Array }[]} */
let clips = [];
/** @type {number | undefined} */
let anchor;
/** Stream frames written so far. */
let written = 0;
let stderr = '';
/** @type {NodeJS.Timeout | undefined} */
let timer;
/** The pipe's lowest level (frames) in the window that began at `since` (epoch ms). */
let lowest = { frames: Infinity, since: 0 };

/** The pipe to aplay: our own, so that what aplay has not read yet can be counted. */
const pipe = ownPipe();
const child = spawn(options.command, options.args, { stdio: [pipe ? pipe.read : 'pipe', 'ignore', 'pipe'] });
if (pipe) closeSync(pipe.read);
child.stdin?.on('error', () => undefined); // aplay gone mid-write: its exit says why
if (child.pid !== undefined) port.postMessage({ type: 'spawned', pid: child.pid });
// aplay reads a header's worth of its input (26 bytes) before it sets the device up.
write(new Int16Array(options.primeFrames));
written = options.primeFrames;
child.stderr?.on('data', (/** @type {Buffer} */ chunk) => {
  const text = chunk.toString();
  stderr = (stderr + text).slice(-16_384);
  if (anchor === undefined && /Its setup is:/.test(stderr)) start();
  for (const line of text.split('\n')) if (/underrun/.test(line)) port.postMessage({ type: 'underrun', text: line.trim() });
});
child.on('error', (/** @type {NodeJS.ErrnoException} */ error) => port.postMessage({ type: 'error', code: error.code, message: error.message }));
child.on('close', (code, signal) => {
  clearInterval(timer);
  if (pipe && !pipe.closed) {
    pipe.closed = true;
    closeSync(pipe.write);
  }
  port.postMessage({ type: 'exit', code, signal, stderr });
  port.close();
});

/** aplay is ready: frame `primeFrames` is due now, and the lead is written at once. */
function start() {
  anchor = now() - (options.primeFrames * 1000) / options.rate;
  lowest = { frames: Infinity, since: now() };
  const size = (/** @type {string} */ name) => Number(new RegExp(`${name}\\s*:\\s*(\\d+)`).exec(stderr)?.[1] ?? 0);
  port.postMessage({ type: 'ready', anchor, bufferFrames: size('buffer_size'), periodFrames: size('period_size') });
  tick();
  timer = setInterval(tick, options.tickMs);
}

/** Write what is due by now plus the lead: silence with the clips mixed in. */
function tick() {
  if (anchor === undefined) return;
  const due = Math.floor(((now() - anchor) * options.rate) / 1000) + options.leadFrames;
  if (due <= written) return;
  // More queued in the pipe than the lead for a whole window (not a moment: aplay or the card
  // catching up after a late read drains it again by itself): skip that much of the silence
  // ahead, never a clip.
  const level = pipe ? pipe.unread() : 0;
  const at = now();
  if (level < lowest.frames) lowest = { frames: level, since: lowest.since };
  if (at - lowest.since >= options.windowMs) {
    const excess = lowest.frames - options.leadFrames;
    if (excess > options.slackFrames && !clips.some((clip) => clip.at < written + excess && clip.at + clip.pcm.length > written)) {
      written += excess;
      port.postMessage({ type: 'skipped', frames: excess });
    }
    lowest = { frames: Infinity, since: at };
    if (due <= written) return;
  }
  const block = new Int16Array(due - written);
  for (const clip of clips) {
    const from = Math.max(written, clip.at);
    const to = Math.min(due, clip.at + clip.pcm.length);
    for (let k = from; k < to; k++) {
      const mixed = (block[k - written] ?? 0) + (clip.pcm[k - clip.at] ?? 0);
      block[k - written] = mixed > 32767 ? 32767 : mixed < -32768 ? -32768 : mixed;
    }
  }
  write(block);
  written = due;
  clips = clips.filter((clip) => {
    const end = clip.at + clip.pcm.length;
    if (written - options.leadFrames < end) return true;
    port.postMessage({ type: 'ended', id: clip.id, end });
    return false;
  });
}

/** Samples to aplay. A full pipe (aplay stuck) loses them: the device will not play them either. */
function write(/** @type {Int16Array} */ samples) {
  const bytes = Buffer.from(samples.buffer, samples.byteOffset, samples.byteLength);
  if (!pipe) return void child.stdin?.write(bytes);
  if (pipe.closed) return;
  try {
    writeSync(pipe.write, bytes);
  } catch (error) {
    const code = /** @type {NodeJS.ErrnoException} */ (error).code;
    if (code !== 'EAGAIN' && code !== 'EPIPE') throw error;
  }
}

/** A pipe whose write end does not block, through libc (koffi); undefined where that cannot load (then aplay's stdin, unmeasured). */
function ownPipe() {
  try {
    const koffi = createRequire(import.meta.url)('koffi');
    const libc = koffi.load('libc.so.6');
    const pipe2 = libc.func('int pipe2(void *fds, int flags)');
    const fcntl = libc.func('int fcntl(int fd, int cmd, ...)');
    const ioctl = libc.func('int ioctl(int fd, unsigned long request, void *out)');
    const fds = Buffer.alloc(8);
    if (pipe2(fds, O_CLOEXEC) !== 0) return undefined;
    const read = fds.readInt32LE(0);
    const writeEnd = fds.readInt32LE(4);
    fcntl(writeEnd, F_SETFL, 'int', O_NONBLOCK);
    const count = Buffer.alloc(4);
    const unread = () => (ioctl(writeEnd, FIONREAD, count) === 0 ? count.readInt32LE(0) / 2 : 0);
    return { read, write: writeEnd, closed: false, unread };
  } catch {
    return undefined;
  }
}

port.on('message', (/** @type {{ type: string, id?: number, at?: number, pcm?: Int16Array }} */ message) => {
  if (message.type === 'clip' && message.pcm && message.at !== undefined && message.id !== undefined) {
    clips.push({ id: message.id, at: message.at, pcm: message.pcm });
  } else if (message.type === 'drop') {
    const clip = clips.find((c) => c.id === message.id);
    if (!clip) return;
    clips = clips.filter((c) => c !== clip);
    port.postMessage({ type: 'dropped', id: clip.id, end: Math.min(clip.at + clip.pcm.length, Math.max(clip.at, written)) });
  } else if (message.type === 'close') {
    clearInterval(timer);
    timer = undefined;
    anchor = undefined;
    if (pipe && !pipe.closed) {
      pipe.closed = true;
      closeSync(pipe.write);
    }
    child.stdin?.end();
  } else if (message.type === 'kill') {
    clearInterval(timer);
    child.kill('SIGKILL');
  }
});
