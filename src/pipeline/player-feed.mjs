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
 * performance.now()): the anchor is taken once aplay has set the device up (the setup its `-v`
 * dumps), so aplay's own start, which moves 0-40 ms from run to run, is not part of it. What sounds lags
 * the timeline by what is queued (the lead, ALSA's buffer, and whatever aplay fell behind by at
 * its start), the same for every clip of the stream. Frames are never skipped to take a lag out:
 * the echo canceller would then have to learn the delay again (tried: a 33 ms skip after the
 * reminder got the early answer taken back by its own echo).
 *
 * In:  {type: 'clip', id, at, pcm}  (stream frame, Int16Array at the stream's rate; mixed)
 *      {type: 'drop', id}           (what is not written yet is never played)
 *      {type: 'hold'}               (silence from the next frame written, the clips going on under it)
 *      {type: 'release'}            (the clips sound again from the next frame written)
 *      {type: 'close'}              (aplay plays what it has, then exits)
 *      {type: 'kill'}               (stop now)
 * Out: {type: 'spawned', pid}, {type: 'ready', anchor, bufferFrames, periodFrames},
 *      {type: 'ended', id, end}, {type: 'dropped', id, end} (end: the first frame not played),
 *      {type: 'held' | 'released', frame} (the first frame written silent, or sounding again),
 *      {type: 'underrun', text}, {type: 'error', code, message},
 *      {type: 'exit', code, signal, stderr}
 */
import { spawn } from 'node:child_process';
import { parentPort, workerData } from 'node:worker_threads';

/** @type {{ command: string, args: string[], rate: number, leadFrames: number, tickMs: number, primeFrames: number }} */
const options = workerData;
const port = /** @type {import('node:worker_threads').MessagePort} */ (parentPort);
const now = () => performance.timeOrigin + performance.now();

/** @type {{ id: number, at: number, pcm: Int16Array }[]} */
let clips = [];
/** @type {number | undefined} */
let anchor;
/** Stream frames written so far. */
let written = 0;
/** Held: silence is written where the clips are (they go on under it, and are heard again once released). */
let held = false;
let stderr = '';
/** @type {NodeJS.Timeout | undefined} */
let timer;

const child = spawn(options.command, options.args, { stdio: ['pipe', 'ignore', 'pipe'] });
child.stdin.on('error', () => undefined); // aplay gone mid-write: its exit says why
if (child.pid !== undefined) port.postMessage({ type: 'spawned', pid: child.pid });
// aplay reads a header's worth of its input (26 bytes) before it sets the device up.
write(new Int16Array(options.primeFrames));
written = options.primeFrames;
child.stderr?.on('data', (/** @type {Buffer} */ chunk) => {
  const text = chunk.toString();
  stderr = (stderr + text).slice(-16_384);
  if (anchor === undefined && /boundary\s*:/.test(stderr)) start(); // the last line of the setup aplay dumps (-v)
  for (const line of text.split('\n')) if (/underrun/.test(line)) port.postMessage({ type: 'underrun', text: line.trim() });
});
child.on('error', (/** @type {NodeJS.ErrnoException} */ error) => port.postMessage({ type: 'error', code: error.code, message: error.message }));
child.on('close', (code, signal) => {
  clearInterval(timer);
  port.postMessage({ type: 'exit', code, signal, stderr });
  port.close();
});

/** aplay is ready: frame `primeFrames` is due now, and the lead is written at once. */
function start() {
  anchor = now() - (options.primeFrames * 1000) / options.rate;
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
  const block = new Int16Array(due - written);
  for (const clip of held ? [] : clips) {
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

/** Samples to aplay. */
function write(/** @type {Int16Array} */ samples) {
  child.stdin.write(Buffer.from(samples.buffer, samples.byteOffset, samples.byteLength));
}

port.on('message', (/** @type {{ type: string, id?: number, at?: number, pcm?: Int16Array }} */ message) => {
  if (message.type === 'clip' && message.pcm && message.at !== undefined && message.id !== undefined) {
    clips.push({ id: message.id, at: message.at, pcm: message.pcm });
  } else if (message.type === 'drop') {
    const clip = clips.find((c) => c.id === message.id);
    if (!clip) return;
    clips = clips.filter((c) => c !== clip);
    port.postMessage({ type: 'dropped', id: clip.id, end: Math.min(clip.at + clip.pcm.length, Math.max(clip.at, written)) });
  } else if (message.type === 'hold' || message.type === 'release') {
    held = message.type === 'hold';
    port.postMessage({ type: held ? 'held' : 'released', frame: written });
  } else if (message.type === 'close') {
    clearInterval(timer);
    timer = undefined;
    anchor = undefined;
    child.stdin.end();
  } else if (message.type === 'kill') {
    clearInterval(timer);
    child.kill('SIGKILL');
  }
});
