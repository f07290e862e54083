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
 * (part of `npm run bench`; it uses dist/, built by `npm run build`). How many rooms a core
 * carries is measured by scripts/bench-rooms-ramp.ts.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeWav } from '../src/pipeline/wav.js';
import { commandWav } from '../test/helpers/speech.js';
import { StreamingSatellite } from '../test/helpers/satellite.js';
import { round, writeResults } from './lib/bench.js';
import { startDaemon, usage } from './lib/rooms.js';

const TURNS = 6;
const ROOMS = 4;
const WINDOW_S = 20;
/** Rooms streaming at once for the capacity check (`IRIS_BENCH_CARRY`): does a reply in one of
 * them stay quick while IRIS runs the wake word on every stream? */
const CARRY = Number(process.env.IRIS_BENCH_CARRY ?? 24);

const work = mkdtempSync(join(tmpdir(), 'iris-bench-rooms-'));
const daemons: ChildProcess[] = [];

async function daemon(satellites: StreamingSatellite[]): Promise<ChildProcess> {
  const { child } = await startDaemon(satellites, work, { started: (c) => daemons.push(c) });
  return child;
}

/** An event that does not come within a minute fails the benchmark instead of hanging it (a machine too busy to keep up with CARRY rooms never answers). */
const within = <T>(event: Promise<T>, what: string): Promise<T> => {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no ${what} within 60 s: is the machine busy (uptime)?`)), 60_000)));
  return Promise.race([event, timeout]).finally(() => clearTimeout(timer));
};

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
    const [h, e, a] = [await within(heard, 'detection'), await within(ended, 'voice-stopped'), await within(audio, 'reply audio')];
    await within(played, 'audio-stop');
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
    const [e, a] = [await within(ended, `voice-stopped with ${CARRY} rooms`), await within(audio, `reply audio with ${CARRY} rooms`)];
    await within(played, `audio-stop with ${CARRY} rooms`);
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
