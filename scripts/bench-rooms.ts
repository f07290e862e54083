/**
 * Benchmark of rooms: the bundled daemon as the brain of satellites on loopback. Each satellite
 * here is a small Wyoming peer that behaves as wyoming-satellite does in its always-streaming
 * mode (info, run-pipeline from the wake stage, 1,024-sample chunks at real-time pace, pong,
 * `played` after each reply) and stamps what arrives, so the figures are IRIS's own:
 * - wake word heard (IRIS's `detection` arrives) → first reply audio byte at the satellite, and
 *   end of speech (`voice-stopped`) → first reply audio byte, p50 over the turns, with
 *   pocketsphinx, espeak-ng and the local path ("what time is it");
 * - CPU and memory per streaming room: the daemon with 0, 1 and ROOMS rooms streaming silence
 *   (IRIS runs the wake word on every stream), over WINDOW_S seconds each: what the first room
 *   costs (it loads the shared models and recogniser) and what each further room adds.
 * Prints figures and writes scripts/results/rooms.json. Run: `npx tsx scripts/bench-rooms.ts`
 * (part of `npm run bench`; it uses dist/, built by `npm run build`).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeWav } from '../src/pipeline/wav.js';
import { commandWav } from '../test/helpers/speech.js';
import { StreamingSatellite } from '../test/helpers/satellite.js';
import { ROOT, round, unitNodeFlags, writeResults } from './lib/bench.js';

const TURNS = 6;
const ROOMS = 4;
const WINDOW_S = 20;
/** Rooms streaming at once for the capacity check (`IRIS_BENCH_CARRY`): does a reply in one of
 * them stay quick while IRIS runs the wake word on every stream? */
const CARRY = Number(process.env.IRIS_BENCH_CARRY ?? 24);

const work = mkdtempSync(join(tmpdir(), 'iris-bench-rooms-'));
const daemons: ChildProcess[] = [];

async function daemon(satellites: StreamingSatellite[]): Promise<ChildProcess> {
  const dir = mkdtempSync(join(work, 'd-'));
  const rooms = satellites.map((s) => `[satellites.${s.name}]\nuri = "tcp://127.0.0.1:${s.port}"\n`).join('');
  writeFileSync(join(dir, 'config'), `[ollama]\nurl = "http://127.0.0.1:9"\n[assistant]\nfollow_up_s = 0\n[audio]\ninput = ""\n[stt]\nengine = "pocketsphinx"\n${rooms}`);
  const child = spawn(process.execPath, [...unitNodeFlags(), join(ROOT, 'dist/iris.mjs'), 'daemon', '--log-level', 'info'], {
    env: { ...process.env, IRIS_CONFIG: join(dir, 'config'), IRIS_STATE_DIR: join(dir, 'state'), IRIS_SOCKET: join(dir, 'control.sock') },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  daemons.push(child);
  let seen = '';
  const wanted = satellites.length === 0 ? 1 : satellites.length;
  await new Promise<void>((resolve, reject) => {
    child.stderr?.on('data', (chunk: Buffer) => {
      seen += chunk.toString();
      const ready = satellites.length === 0 ? /ready:/.test(seen) : (seen.match(/listening for "/g) ?? []).length >= wanted;
      if (ready) resolve();
    });
    child.once('exit', (code) => reject(new Error(`the daemon exited (${code}): ${seen}`)));
  });
  return child;
}

/** CPU (ms per second of wall time) and peak resident memory (MiB, sampled every 250 ms: one reading swings with V8's collections) of `pid` over `seconds`. */
async function usage(pid: number, seconds: number): Promise<{ cpuMsPerS: number; rssMiB: number }> {
  const ticks = () => {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    return Number(fields[11]) + Number(fields[12]); // utime + stime, in clock ticks (100 per second)
  };
  const rss = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN) / 1024;
  await new Promise((resolve) => setTimeout(resolve, 3_000)); // settle after start
  const [t0, w0] = [ticks(), performance.now()];
  let peak = 0;
  while (performance.now() - w0 < seconds * 1000) {
    peak = Math.max(peak, rss());
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  const cpuMsPerS = ((ticks() - t0) * 10) / ((performance.now() - w0) / 1000);
  return { cpuMsPerS: round(cpuMsPerS, 1), rssMiB: round(peak, 1) };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

try {
  // 1. Turns in one room: wake word → first audio byte back, end of speech → first audio byte.
  const command = decodeWav(readFileSync(commandWav('hey jarvis, what time is it')));
  const kitchen = await new StreamingSatellite('kitchen').listen();
  const one = await daemon([kitchen]);
  const wakeToAudio: number[] = [];
  const speechEndToAudio: number[] = [];
  for (let i = 0; i < TURNS; i++) {
    const heard = kitchen.next('detection');
    const ended = kitchen.next('voice-stopped');
    const audio = kitchen.next('audio-chunk');
    const played = kitchen.next('audio-stop');
    kitchen.say(command);
    const [h, e, a] = [await heard, await ended, await audio];
    await played;
    wakeToAudio.push(a - h);
    speechEndToAudio.push(a - e);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
  }
  one.kill('SIGTERM');
  kitchen.close();

  // 2. CPU and memory: no rooms, one room, ROOMS rooms, streaming silence.
  const measure = async (count: number) => {
    const sats = await Promise.all(Array.from({ length: count }, (_, i) => new StreamingSatellite(`room${i + 1}`).listen()));
    const running = await daemon(sats);
    const used = await usage(running.pid ?? 0, WINDOW_S);
    running.kill('SIGTERM');
    for (const s of sats) s.close();
    return used;
  };
  const none = await measure(0);
  const single = await measure(1);
  const streaming = await measure(ROOMS);

  // 3. Capacity: CARRY rooms streaming; the daemon's CPU, and a command answered in one of them.
  const crowd = await Promise.all(Array.from({ length: CARRY }, (_, i) => new StreamingSatellite(`room${i + 1}`).listen()));
  const busy = await daemon(crowd);
  const crowded = usage(busy.pid ?? 0, WINDOW_S);
  const crowdedReplies: number[] = [];
  const speaker = crowd[0] as StreamingSatellite;
  for (let i = 0; i < 3; i++) {
    const ended = speaker.next('voice-stopped');
    const audio = speaker.next('audio-chunk');
    const played = speaker.next('audio-stop');
    speaker.say(command);
    const [e, a] = [await ended, await audio];
    await played;
    crowdedReplies.push(a - e);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
  }
  const carried = await crowded;
  busy.kill('SIGTERM');
  for (const s of crowd) s.close();

  const figures = {
    turns: TURNS,
    wake_to_first_audio_ms_p50: round(median(wakeToAudio), 0),
    end_of_speech_to_first_audio_ms_p50: round(median(speechEndToAudio), 0),
    wake_to_first_audio_ms: wakeToAudio.map((x) => round(x, 0)),
    rooms: ROOMS,
    window_s: WINDOW_S,
    daemon_no_rooms: none,
    daemon_one_room: single,
    daemon_with_rooms: streaming,
    first_room: { cpu_ms_per_s: round(single.cpuMsPerS - none.cpuMsPerS, 1), rss_mib: round(single.rssMiB - none.rssMiB, 1) },
    cpu_ms_per_s_per_room: round((streaming.cpuMsPerS - single.cpuMsPerS) / (ROOMS - 1), 1),
    // CARRY rooms streaming, three commands said in one of them meanwhile: the daemon's CPU (of
    // the 2,000 ms/s two cores give) and that room's end of speech → first reply audio byte.
    carry: { rooms: CARRY, daemon: carried, share_of_two_cores: round(carried.cpuMsPerS / 2000, 2), end_of_speech_to_first_audio_ms: crowdedReplies.map((x) => round(x, 0)) },
    // Not a per-room memory figure: what each further room adds (~10 MiB) is below the run-to-run
    // swing of the daemon's peak RSS (±30 MiB), so the totals are reported as measured.
  };
  console.log(`rooms: wake word → first reply audio byte at the satellite ${figures.wake_to_first_audio_ms_p50} ms p50 (the command is spoken in between); end of speech → first audio byte ${figures.end_of_speech_to_first_audio_ms_p50} ms p50, over ${TURNS} turns`);
  console.log(`rooms: each further streaming room ${figures.cpu_ms_per_s_per_room} ms CPU per second (${round(figures.cpu_ms_per_s_per_room / 10, 1)} % of a core), the first ${figures.first_room.cpu_ms_per_s} ms/s; daemon CPU ${none.cpuMsPerS} → ${single.cpuMsPerS} → ${streaming.cpuMsPerS} ms/s and peak RSS ${none.rssMiB} → ${single.rssMiB} → ${streaming.rssMiB} MiB with 0, 1, ${ROOMS} rooms`);
  console.log(`rooms: ${CARRY} rooms streaming: daemon CPU ${carried.cpuMsPerS} ms/s (${round(carried.cpuMsPerS / 20, 0)} % of 2 cores), peak RSS ${carried.rssMiB} MiB; a command in one of them, end of speech → first audio byte ${figures.carry.end_of_speech_to_first_audio_ms.join(', ')} ms`);
  writeResults('rooms', figures);
} finally {
  for (const d of daemons) if (d.exitCode === null) d.kill('SIGKILL');
  rmSync(work, { recursive: true, force: true });
}
