/**
 * Hostile Wyoming peers against a running daemon (the bundle, with the unit's Node flags), on
 * loopback (issue 25, items 1–3). Build first (`node --import tsx scripts/build.ts`).
 * 1. one peer: a `transcript` held by a slow model, then 150 `audio-chunk`s of 4 MiB — the
 *    daemon's peak RSS under it and after the peer closes (target ≤ 400 MB);
 * 2. `synthesize-start`, a chunk of 120 sentences, `synthesize-stop`; then a 1 MiB chunk of
 *    "A. " — the most espeak-ng processes at once (target ≤ 4) and the peak RSS;
 * 3. 32 peers sending one header byte every 20 s while Home Assistant asks `describe` every
 *    2 s (target: every one answered), and one peer sending `detect` audio at line speed for
 *    15 s — the seconds of audio taken and the daemon's CPU.
 * Prints the figures as JSON; exits 1 when a target is missed.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { encodeEvent, EventReader, type WyomingEvent } from '../src/wyoming/events.js';
import { OllamaDouble } from '../test/helpers/ollama-double.js';
import { closedPort } from '../test/helpers/net.js';
import { heapProbe, ROOT, round, unitNodeFlags } from './lib/bench.js';

const MiB = 1024 * 1024;
const FORMAT = { rate: 16_000, width: 2, channels: 1 };
const dir = mkdtempSync(join(tmpdir(), 'iris-attack-'));
const double = await new OllamaDouble().start();
const port = await closedPort();
writeFileSync(join(dir, 'config'), ['[assistant]', 'timezone = "UTC"', '[ollama]', `url = "${double.url}"`, '[wyoming]', `listen = "tcp://127.0.0.1:${port}"`].join('\n'));
const probe = ['--expose-gc', '--require', join(ROOT, 'scripts/lib/heap-probe.cjs')];
const daemon = spawn(process.execPath, [...unitNodeFlags(), ...probe, join(ROOT, 'dist/iris.mjs'), 'daemon'], {
  env: { ...process.env, IRIS_CONFIG: join(dir, 'config'), IRIS_STATE_DIR: join(dir, 'state'), IRIS_SOCKET: join(dir, 'control.sock') },
  stdio: ['ignore', 'ignore', 'pipe'],
});
let stderr = '';
await new Promise<void>((resolve, reject) => {
  daemon.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
    if (/wyoming services on/.test(stderr) && /ready:/.test(stderr)) resolve();
  });
  daemon.once('exit', (code) => reject(new Error(`daemon exited ${code}: ${stderr}`)));
});
const pid = daemon.pid ?? 0;

/** After a full GC (scripts/lib/heap-probe.cjs): the daemon's live heap, its memory outside the heap and RSS (MB). */
async function afterGc(): Promise<{ heap_mb: number; external_mb: number; rss_mb: number }> {
  const m = await heapProbe(daemon);
  return { heap_mb: round(m.heapUsed / MiB, 0), external_mb: round(m.external / MiB, 0), rss_mb: round(m.rss / MiB, 0) };
}
const rssMb = (): number => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;
const cpuS = (): number => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(fields[11]) + Number(fields[12])) / 100; // utime + stime, in clock ticks of 10 ms
};
/** The daemon's espeak-ng children now. */
const espeaks = (): number => readdirSync('/proc').filter((p) => /^\d+$/.test(p)).filter((p) => {
  try {
    const stat = readFileSync(`/proc/${p}/stat`, 'utf8');
    return stat.includes('(espeak-ng)') && stat.split(') ')[1]?.split(' ')[1] === String(pid);
  } catch {
    return false;
  }
}).length;
/** Sample `probe` every `everyMs` while `work` runs; the highest value. */
async function peak(probe: () => number, everyMs: number, work: Promise<unknown>): Promise<number> {
  let most = probe();
  const timer = setInterval(() => (most = Math.max(most, probe())), everyMs);
  try {
    await work;
  } finally {
    clearInterval(timer);
  }
  return Math.max(most, probe());
}

function peer(): { socket: Socket; events: WyomingEvent[]; next: (type: string) => Promise<WyomingEvent>; closed: Promise<void> } {
  const socket = connect(port, '127.0.0.1');
  const reader = new EventReader();
  const events: WyomingEvent[] = [];
  socket.on('data', (chunk: Buffer) => events.push(...reader.push(chunk)));
  socket.on('error', () => undefined);
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  const next = async (type: string) => {
    for (;;) {
      const found = events.find((e) => e.type === type || e.type === 'error');
      if (found !== undefined) return found;
      if (socket.destroyed) throw new Error(`closed before ${type}`);
      await sleep(10);
    }
  };
  return { socket, events, next, closed };
}

const figures: Record<string, unknown> = { idle_after_gc: await afterGc() };

// 1. Events queued behind a slow request: one peer, then 32 at once.
for (const peers of [1, 32]) {
  let release = () => undefined as void;
  const held = new Promise<void>((resolve) => (release = resolve));
  for (let i = 0; i < peers; i++) double.script({ content: ['Slowly.'], hold: held });
  const payload = Buffer.alloc(4 * MiB);
  const head = Buffer.from(`${JSON.stringify({ type: 'audio-chunk', data: FORMAT, payload_length: payload.length })}\n`);
  const attackers = Array.from({ length: peers }, (_, i) => {
    const attacker = peer();
    attacker.socket.write(encodeEvent('transcript', { text: `tell me a long story about llamas, number ${i}` }));
    for (let n = 0; n < 150; n++) {
      attacker.socket.write(head);
      attacker.socket.write(payload);
    }
    return attacker;
  });
  figures[`attack1_${peers}_peak_rss_mb`] = round(await peak(rssMb, 100, sleep(10_000)), 0);
  for (const { socket } of attackers) socket.destroy();
  release();
  await Promise.all(attackers.map((a) => a.closed));
  await sleep(2_000);
  figures[`attack1_${peers}_after_close_after_gc`] = await afterGc();
}

// 2. One espeak-ng per sentence.
{
  const { socket, next } = peer();
  const sentences = Array.from({ length: 120 }, (_, i) => `This is sentence number ${i + 1}.`).join(' ');
  socket.write(Buffer.concat([encodeEvent('synthesize-start'), encodeEvent('synthesize-chunk', { text: sentences }), encodeEvent('synthesize-stop')]));
  figures.attack2_max_espeak_120_sentences = await peak(espeaks, 5, next('synthesize-stopped'));
  socket.destroy();
  const big = peer();
  big.socket.write(Buffer.concat([encodeEvent('synthesize-start'), encodeEvent('synthesize-chunk', { text: 'A. '.repeat(Math.floor((MiB - 20) / 3)) })]));
  let rss = 0;
  figures.attack2_max_espeak_1mib = await peak(() => ((rss = Math.max(rss, rssMb())), espeaks()), 5, sleep(10_000));
  figures.attack2_peak_rss_1mib_mb = round(rss, 0);
  figures.attack2_sentences_sent_back_in_10s = big.events.filter((e) => e.type === 'audio-stop').length;
  big.socket.destroy();
  await big.closed;
}

// 3. Slowloris, and audio at line speed.
{
  // 32 at all times: one closed is opened again at once, as an attacker would.
  let stopped = false;
  let opened = 0;
  const tricklers = new Set<Socket>();
  const trickler = (): void => {
    const { socket, closed } = peer();
    opened += 1;
    tricklers.add(socket);
    socket.write('{');
    void closed.then(() => {
      tricklers.delete(socket);
      if (!stopped) trickler();
    });
  };
  for (let i = 0; i < 32; i++) trickler();
  const trickle = setInterval(() => tricklers.forEach((t) => t.destroyed || t.write(' ')), 20_000);
  await sleep(1_000);
  const answers: string[] = [];
  for (let i = 0; i < 15; i++) {
    const ha = peer();
    ha.socket.write(encodeEvent('describe'));
    answers.push(await ha.next('info').then((e) => (e.type === 'info' ? 'info' : String(e.data.code)), () => 'closed'));
    ha.socket.destroy();
    await sleep(2_000);
  }
  stopped = true;
  clearInterval(trickle);
  figures.attack3_describe_answered = `${answers.filter((a) => a === 'info').length} of ${answers.length}`;
  figures.attack3_trickling_connections_opened = opened;
  tricklers.forEach((t) => t.destroy());

  const fast = peer();
  fast.socket.write(encodeEvent('detect', { names: ['hey_jarvis'] }));
  const chunk = encodeEvent('audio-chunk', FORMAT, Buffer.alloc(2048));
  const startCpu = cpuS();
  let written = 0;
  const startMs = performance.now();
  while (performance.now() - startMs < 15_000 && !fast.socket.destroyed) {
    if (fast.socket.writableLength < 4 * MiB) {
      for (let i = 0; i < 256; i++) fast.socket.write(chunk);
      written += 256;
    } else await sleep(20);
  }
  const takenS = ((written * chunk.length - fast.socket.writableLength) / chunk.length) * (2048 / 32_000);
  figures.attack3_detect_audio_taken_s = round(takenS, 0); // includes what waits in the kernel buffers
  figures.attack3_detect_cpu_cores = round((cpuS() - startCpu) / 15, 2);
  fast.socket.destroy();
}

figures.end_after_gc = await afterGc();
daemon.kill('SIGTERM');
await new Promise((resolve) => daemon.once('exit', resolve));
await double.close();
rmSync(dir, { recursive: true, force: true });
console.log(JSON.stringify(figures, null, 2));
const missed = Number(figures.attack1_peak_rss_mb) > 400 || Number(figures.attack2_max_espeak_120_sentences) > 4 || Number(figures.attack2_max_espeak_1mib) > 4 || !String(figures.attack3_describe_answered).startsWith('15 ');
process.exit(missed ? 1 : 0);
