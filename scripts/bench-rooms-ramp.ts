/**
 * How many streaming rooms one core carries, measured: the bundled daemon pinned to `CPUS`
 * (taskset; default core 1, while this process, the satellites, runs where it was started —
 * `npm run bench` puts it on core 0) as the brain of N loopback satellites, each streaming at
 * real-time pace from the wake stage (IRIS runs the wake word and VAD on every stream), N
 * ramped up over `STEPS`. At each step, after one warm-up turn:
 * - TURNS turns in room 1: "hey jarvis, what time is it" said into its stream while every other
 *   room streams silence; stamped at the satellite against when it sent the audio:
 *   wake lag (IRIS's `detection` arrives − the satellite sent the audio it names: how far IRIS
 *   is behind real time; down to −64 ms, a chunk carrying audio ahead of the frame), wake word →
 *   first reply audio byte, and end of the user's speech → first reply audio byte;
 * - after each turn "hey jarvis" alone in another room (a different one each turn): its wake
 *   lag, so a backlog in rooms other than the one talking shows too;
 * - the daemon's CPU and peak RSS, how busy its cores were in all (other processes included),
 *   the load average, reconnections, and the daemon's warnings and errors.
 * A step is carried when, with every room connected throughout and no warning logged:
 * every turn is answered; end of speech → first reply byte p95 ≤ REPLY_LIMIT_MS; wake lag (room
 * 1 and the probes) p95 ≤ LAG_LIMIT_MS; and the lag does not grow over the step (the last three
 * lags' mean at most GROWTH_LIMIT_MS above the first three's): the audio backlog is bounded.
 * With 5 turns a p95 is the worst of them. The ramp stops at the first step not carried (tried
 * up to TRIES times when other processes used more than 10 % of the cores meanwhile; each step
 * first waits up to QUIET_WAIT_S for them to leave the cores), then halves the
 * gap to the last one carried down to REFINE rooms. `IRIS_RAMP_OVERLOAD=N` then runs N rooms
 * for OVERLOAD_S to see how IRIS fails (who lags, whether a room is dropped).
 * Prints each step and writes scripts/results/rooms-ramp-<n>core(s).json.
 * Run: `npm run bench:rooms-ramp`, or `taskset -c 0 npx tsx scripts/bench-rooms-ramp.ts`;
 * `IRIS_RAMP_CPUS=0,1` pins the daemon to both cores instead (every room's wake word and VAD
 * run on its one JavaScript thread, so a second core adds little), `IRIS_RAMP_STEPS=8,16` and
 * `IRIS_RAMP_TURNS` change the ramp. Needs dist/ (`npm run build`).
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeWav } from '../src/pipeline/wav.js';
import { commandWav } from '../test/helpers/speech.js';
import { StreamingSatellite } from '../test/helpers/satellite.js';
import { round, writeResults } from './lib/bench.js';
import { coresBusy, meter, parseCpus, startDaemon, type Metered } from './lib/rooms.js';

const CPUS = process.env.IRIS_RAMP_CPUS ?? '1';
const STEPS = (process.env.IRIS_RAMP_STEPS ?? '8,16,24,32,40,48,56,64,80,96,128').split(',').map(Number);
const TURNS = Number(process.env.IRIS_RAMP_TURNS ?? 5);
/** The user stops speaking → the first reply audio byte, p95 (ms): above this a room feels slow (VAD's 0.7 s of silence is part of it). */
const REPLY_LIMIT_MS = 1_500;
/** Wake lag p95 (ms): the wake word is answered at most this long after it was said. */
const LAG_LIMIT_MS = 1_000;
/** Growth of the wake lag over a step (ms) beyond which the backlog is taken as growing. */
const GROWTH_LIMIT_MS = 300;
/** Pad after the command in the fixture (s): commandWav's default, so the speech ends this long before the samples do. */
const TRAILING_PAD_S = 1.5;
/** Other processes using more than this share of the measured cores make a failed step worth a second try. */
const CONTENDED = 0.1;
/** The ramp halves the gap between the last step carried and the first not until it is this many rooms. */
const REFINE = 2;
/** Rooms for the overload run (`IRIS_RAMP_OVERLOAD`; 0: none): well past what is carried, to see how IRIS fails. */
const OVERLOAD = Number(process.env.IRIS_RAMP_OVERLOAD ?? 0);
/** How long the overload run lasts (s), and a probe every this often (s), each in another room. */
const OVERLOAD_S = 90;
const OVERLOAD_PROBE_EVERY_S = 5;
/** A step failed while other processes used the cores is tried this many times in all. */
const TRIES = 3;
/** Before each step, wait up to this long (s; `IRIS_RAMP_QUIET_WAIT_S`) for other processes to leave the cores below `CONTENDED` (checked over 3 s). */
const QUIET_WAIT_S = Number(process.env.IRIS_RAMP_QUIET_WAIT_S ?? 90);
/** Longest wait for one event of a turn (ms): a step this far behind is not carried anyway. */
const EVENT_TIMEOUT_MS = 20_000;

const work = mkdtempSync(join(tmpdir(), 'iris-bench-ramp-'));
const daemons: ChildProcess[] = [];
const cpus = parseCpus(CPUS);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The next event of `type` at `sat` (its arrival and data), or undefined after `timeoutMs`. Ask before causing it. */
function expectEvent(sat: StreamingSatellite, type: string, timeoutMs = EVENT_TIMEOUT_MS): Promise<{ atMs: number; data: Record<string, unknown> } | undefined> {
  const arrived = sat.next(type).then((atMs) => ({ atMs, data: [...sat.received].reverse().find((e) => e.type === type)?.data ?? {} }));
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), timeoutMs)));
  return Promise.race([arrived, timeout]).finally(() => clearTimeout(timer));
}

const quantile = (xs: number[], q: number): number => {
  const sorted = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? NaN;
};
const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;

/** One turn in `sat`: the command said, IRIS's events stamped against when the audio left. */
async function turn(sat: StreamingSatellite, samples: Int16Array): Promise<{ wakeLagMs: number; wakeToAudioMs: number; speechEndToAudioMs: number; answered: boolean }> {
  const heard = expectEvent(sat, 'detection');
  const audio = expectEvent(sat, 'audio-chunk', EVENT_TIMEOUT_MS * 2);
  const played = expectEvent(sat, 'audio-stop', EVENT_TIMEOUT_MS * 3);
  const startS = sat.say(samples);
  const speechEndMs = sat.sentAtMs(startS + samples.length / 16_000 - TRAILING_PAD_S);
  const h = await heard;
  const wakeSentMs = h === undefined ? NaN : sat.sentAtMs(Number(h.data.timestamp) / 1000);
  const a = h === undefined ? undefined : await audio;
  if (a !== undefined) await played;
  return {
    wakeLagMs: h === undefined ? Infinity : h.atMs - wakeSentMs,
    wakeToAudioMs: a === undefined ? Infinity : a.atMs - wakeSentMs,
    speechEndToAudioMs: a === undefined ? Infinity : a.atMs - speechEndMs,
    answered: a !== undefined,
  };
}

/** "hey jarvis" alone in `sat`: how long after the satellite sent it IRIS's detection arrived (ms). */
async function probe(sat: StreamingSatellite, samples: Int16Array, timeoutMs = EVENT_TIMEOUT_MS): Promise<number> {
  const heard = expectEvent(sat, 'detection', timeoutMs);
  sat.say(samples);
  const h = await heard;
  return h === undefined ? Infinity : h.atMs - sat.sentAtMs(Number(h.data.timestamp) / 1000);
}

interface Step {
  rooms: number;
  carried: boolean;
  /** Other processes used more than `CONTENDED` of the cores during the step: a failure may be theirs. */
  contended: boolean;
  /** Seconds waited for the cores to be quiet before the step, and whether they were. */
  quiet_before: { waited_s: number; quiet: boolean };
  why: string[];
  ready_s: number;
  daemon: Metered;
  /** Other processes on the measured cores (ms/s): their busy time less the daemon's CPU. */
  others_ms_per_s: number;
  wake_lag_ms: number[];
  probe_lag_ms: number[];
  wake_to_first_audio_ms: { p50: number; p95: number };
  end_of_speech_to_first_audio_ms: { p50: number; p95: number; all: number[] };
  answered: number;
  reconnects: number;
  /** Warnings and errors the daemon logged during the step (the first 10). */
  warnings: string[];
  /** The satellites' own worst lateness sending a chunk (ms): this process's lag, included in the lags above. */
  driver_late_ms: number;
  /** This process's CPU (ms/s): the satellites. */
  driver_cpu_ms_per_s: number;
}

/** Wait up to QUIET_WAIT_S for other processes to leave the measured cores (nothing of ours runs there between steps). */
async function quietCores(): Promise<{ waited_s: number; quiet: boolean }> {
  const startMs = performance.now();
  for (;;) {
    const quiet = (await coresBusy(cpus, 3)) <= CONTENDED * 1000 * cpus.length;
    const waited = (performance.now() - startMs) / 1000;
    if (quiet || waited > QUIET_WAIT_S) return { waited_s: round(waited, 0), quiet };
  }
}

async function step(rooms: number, command: Int16Array, wakeOnly: Int16Array): Promise<Step> {
  const quiet = await quietCores();
  const sats = await Promise.all(Array.from({ length: rooms }, (_, i) => new StreamingSatellite(`room${i + 1}`).listen()));
  try {
    const daemon = await startDaemon(sats, work, { cpus: CPUS, readyTimeoutMs: 60_000 + rooms * 2_000, started: (c) => daemons.push(c) });
    try {
      const speaker = sats[0] as StreamingSatellite;
      await sleep(3_000);
      await turn(speaker, command); // warm-up: the backlog of the start drained, the recogniser loaded
      await sleep(1_000);
      const logFrom = daemon.log().length;
      const connections = sats.reduce((n, s) => n + s.connections, 0);
      const m = meter(daemon.child.pid ?? 0, cpus);
      const driver0 = [process.cpuUsage(), performance.now()] as const;
      let late = 0;
      const lateness = setInterval(() => (late = Math.max(late, ...sats.map((s) => s.lateMs))), 100);
      const turns: Awaited<ReturnType<typeof turn>>[] = [];
      const probes: number[] = [];
      const lags: number[] = []; // room 1's and the probes', in the order they happened
      for (let i = 0; i < TURNS; i++) {
        const t = await turn(speaker, command);
        turns.push(t);
        lags.push(t.wakeLagMs);
        if (!t.answered) break; // far behind: the step is not carried, and more turns only wait
        await sleep(500);
        if (rooms > 1) {
          const p = await probe(sats[1 + (i % (rooms - 1))] as StreamingSatellite, wakeOnly);
          probes.push(p);
          lags.push(p);
          if (!Number.isFinite(p)) break;
        }
        await sleep(1_000);
      }
      clearInterval(lateness);
      const used = m.stop();
      const driverCpu = process.cpuUsage(driver0[0]);
      const driverMsPerS = (driverCpu.user + driverCpu.system) / 1000 / ((performance.now() - driver0[1]) / 1000);
      const warnings = daemon
        .log()
        .slice(logFrom)
        .split('\n')
        .filter((line) => /\b(warn|warning|error)\b|too fast|disconnect|lost/i.test(line));
      const reconnects = sats.reduce((n, s) => n + s.connections, 0) - connections;
      const replies = turns.map((t) => t.speechEndToAudioMs);
      const allLags = [...turns.map((t) => t.wakeLagMs), ...probes];
      const growth = lags.length >= 6 ? mean(lags.slice(-3)) - mean(lags.slice(0, 3)) : 0;
      const why: string[] = [];
      if (turns.length < TURNS || turns.some((t) => !t.answered)) why.push(`${turns.filter((t) => t.answered).length} of ${TURNS} turns answered`);
      if (probes.some((p) => !Number.isFinite(p))) why.push('a probe was never heard');
      if (!(quantile(replies, 0.95) <= REPLY_LIMIT_MS)) why.push(`reply p95 ${round(quantile(replies, 0.95), 0)} ms > ${REPLY_LIMIT_MS}`);
      if (!(quantile(allLags, 0.95) <= LAG_LIMIT_MS)) why.push(`wake lag p95 ${round(quantile(allLags, 0.95), 0)} ms > ${LAG_LIMIT_MS}`);
      if (growth > GROWTH_LIMIT_MS) why.push(`wake lag grew ${round(growth, 0)} ms over the step`);
      if (reconnects > 0) why.push(`${reconnects} reconnections`);
      if (warnings.length > 0) why.push(`${warnings.length} warnings logged`);
      const coresBusy = used.coresBusyMsPerS ?? NaN;
      return {
        rooms,
        carried: why.length === 0,
        contended: Math.max(0, coresBusy - used.cpuMsPerS) > CONTENDED * 1000 * cpus.length,
        quiet_before: quiet,
        why,
        ready_s: round(daemon.readyMs / 1000, 1),
        daemon: used,
        others_ms_per_s: round(Math.max(0, coresBusy - used.cpuMsPerS), 1),
        wake_lag_ms: turns.map((t) => round(t.wakeLagMs, 0)),
        probe_lag_ms: probes.map((p) => round(p, 0)),
        wake_to_first_audio_ms: { p50: round(quantile(turns.map((t) => t.wakeToAudioMs), 0.5), 0), p95: round(quantile(turns.map((t) => t.wakeToAudioMs), 0.95), 0) },
        end_of_speech_to_first_audio_ms: { p50: round(quantile(replies, 0.5), 0), p95: round(quantile(replies, 0.95), 0), all: replies.map((r) => round(r, 0)) },
        answered: turns.filter((t) => t.answered).length,
        reconnects,
        warnings: warnings.slice(0, 10),
        driver_late_ms: round(late, 0),
        driver_cpu_ms_per_s: round(driverMsPerS, 1),
      };
    } finally {
      daemon.child.kill('SIGTERM');
      await new Promise((resolve) => (daemon.child.exitCode === null ? daemon.child.once('exit', resolve) : resolve(undefined)));
    }
  } finally {
    for (const s of sats) s.close();
  }
}

/**
 * Far past what is carried: `rooms` streaming for OVERLOAD_S, "hey jarvis" said in another room
 * every OVERLOAD_PROBE_EVERY_S (not waiting for the last to be heard) and a command in room 1
 * after 10 s: how far behind each room is over time, whether a turn is answered at all, and
 * whether IRIS drops rooms (reconnections, warnings) or lets every room lag.
 */
async function overload(rooms: number, command: Int16Array, wakeOnly: Int16Array) {
  const sats = await Promise.all(Array.from({ length: rooms }, (_, i) => new StreamingSatellite(`room${i + 1}`).listen()));
  const daemon = await startDaemon(sats, work, { cpus: CPUS, readyTimeoutMs: 60_000 + rooms * 2_000, started: (c) => daemons.push(c) });
  try {
    const logFrom = daemon.log().length;
    const connections = sats.reduce((n, s) => n + s.connections, 0);
    const startMs = performance.now();
    const m = meter(daemon.child.pid ?? 0, cpus);
    const probes: Promise<{ at_s: number; room: string; lag_ms: number }>[] = [];
    await sleep(3_000);
    const talk = sleep(7_000).then(async () => {
      const heard = expectEvent(sats[0] as StreamingSatellite, 'detection', 60_000);
      const audio = expectEvent(sats[0] as StreamingSatellite, 'audio-chunk', 60_000);
      const startS = (sats[0] as StreamingSatellite).say(command);
      const endMs = (sats[0] as StreamingSatellite).sentAtMs(startS + command.length / 16_000 - TRAILING_PAD_S);
      const [h, a] = [await heard, await audio];
      return { wake_lag_ms: h ? round(h.atMs - (sats[0] as StreamingSatellite).sentAtMs(Number(h.data.timestamp) / 1000), 0) : null, end_of_speech_to_first_audio_ms: a ? round(a.atMs - endMs, 0) : null };
    });
    for (let i = 0; (i + 1) * OVERLOAD_PROBE_EVERY_S < OVERLOAD_S && i + 1 < rooms; i++) {
      const sat = sats[1 + i] as StreamingSatellite;
      const atS = (performance.now() - startMs) / 1000;
      probes.push(probe(sat, wakeOnly, 60_000).then((lag) => ({ at_s: round(atS, 0), room: sat.name, lag_ms: Number.isFinite(lag) ? round(lag, 0) : -1 })));
      await sleep(OVERLOAD_PROBE_EVERY_S * 1000);
    }
    const [heard, turned] = [await Promise.all(probes), await talk];
    const used = m.stop();
    const warnings = daemon.log().slice(logFrom).split('\n').filter((line) => /\b(warn|warning|error)\b|too fast|disconnect|lost/i.test(line));
    const result = {
      rooms,
      daemon: used,
      ready_s: round(daemon.readyMs / 1000, 1),
      // lag_ms -1: not heard within 60 s
      probes: heard,
      turn_in_room1: turned,
      reconnects: sats.reduce((n, s) => n + s.connections, 0) - connections,
      warnings: warnings.slice(0, 20),
      warning_count: warnings.length,
    };
    console.log(
      `overload, ${rooms} rooms on core(s) ${CPUS}: daemon ${round(used.cpuMsPerS / 10, 0)} % of a core; wake lag over time ${heard.map((p) => `${p.at_s}s:${p.lag_ms}`).join(' ')} ms (-1: not heard in 60 s); ` +
        `a command in room 1: wake lag ${turned.wake_lag_ms} ms, end of speech → first reply byte ${turned.end_of_speech_to_first_audio_ms} ms; ${result.reconnects} reconnections, ${warnings.length} warnings${warnings[0] ? ` (first: ${warnings[0]})` : ''}`,
    );
    return result;
  } finally {
    daemon.child.kill('SIGTERM');
    for (const s of sats) s.close();
  }
}

const show = (s: Step): string =>
  `${String(s.rooms).padStart(4)} rooms: ${s.carried ? 'carried' : `NOT carried (${s.why.join('; ')})`}; daemon ${round(s.daemon.cpuMsPerS / 10, 0)} % of a core, ` +
  `peak RSS ${s.daemon.rssMiB} MiB, others on its cores ${round(s.others_ms_per_s / 10, 0)} %, load ${s.daemon.load.join('→')}; ` +
  `wake lag ${s.wake_lag_ms.join('/')} ms (probes ${s.probe_lag_ms.join('/')}); wake → first reply byte p50 ${s.wake_to_first_audio_ms.p50} p95 ${s.wake_to_first_audio_ms.p95} ms; ` +
  `end of speech → first reply byte p50 ${s.end_of_speech_to_first_audio_ms.p50} p95 ${s.end_of_speech_to_first_audio_ms.p95} ms; ready in ${s.ready_s} s` +
  (s.quiet_before.waited_s > 3 ? `; waited ${s.quiet_before.waited_s} s for quiet cores${s.quiet_before.quiet ? '' : ' in vain'}` : '');

try {
  const command = decodeWav(readFileSync(commandWav('hey jarvis, what time is it')));
  const wakeOnly = decodeWav(readFileSync(commandWav('hey jarvis')));
  const steps: Step[] = [];
  const loadBefore = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).map(Number);
  console.log(`rooms ramp: daemon on core(s) ${CPUS}, ${TURNS} turns a step, load average ${loadBefore.join(' ')}`);
  const measured = async (rooms: number): Promise<Step> => {
    let s = await step(rooms, command, wakeOnly);
    console.log(show(s));
    for (let tries = 1; !s.carried && s.contended && tries < TRIES; tries++) {
      console.log(`  other processes used ${round(s.others_ms_per_s / 10, 0)} % of the core(s): once more`);
      steps.push(s);
      s = await step(rooms, command, wakeOnly);
      console.log(show(s));
    }
    steps.push(s);
    return s;
  };
  // A room count is carried when a try of it was (the failed tries before were contended).
  const carriedAt = (rooms: number) => steps.some((s) => s.rooms === rooms && s.carried);
  for (const rooms of STEPS) if (!(await measured(rooms)).carried) break;
  // Between the last step carried and the first not, halve the gap down to REFINE rooms.
  for (;;) {
    const lo = Math.max(0, ...steps.filter((s) => s.carried).map((s) => s.rooms));
    const hi = Math.min(...steps.filter((s) => !carriedAt(s.rooms)).map((s) => s.rooms));
    if (!Number.isFinite(hi) || hi - lo <= REFINE) break;
    await measured(Math.round((lo + hi) / 2));
  }
  steps.sort((a, b) => a.rooms - b.rooms); // stable: a count's tries stay in order
  const overloaded = OVERLOAD > 0 ? await overload(OVERLOAD, command, wakeOnly) : undefined;
  const first = steps.find((s) => !carriedAt(s.rooms) && steps.filter((t) => t.rooms === s.rooms).at(-1) === s);
  // The most rooms carried below the first count that was not (a lucky step above it does not count).
  const carried = steps.filter((s) => s.carried && (first === undefined || s.rooms < first.rooms));
  const most = carried.at(-1)?.rooms ?? 0;
  // What each further room costs, fitted over the carried steps (least squares): at these counts a room's RSS shows above the swing.
  const fit = (ys: number[], xs: number[]) => {
    const [mx, my] = [mean(xs), mean(ys)];
    const slope = xs.reduce((a, x, i) => a + (x - mx) * ((ys[i] ?? 0) - my), 0) / xs.reduce((a, x) => a + (x - mx) ** 2, 0);
    return { slope, intercept: my - slope * mx };
  };
  const xs = carried.map((s) => s.rooms);
  // Only over a span of rooms wide enough for the slope to mean something.
  const fits = carried.length >= 3 && Math.max(...xs) - Math.min(...xs) >= 8;
  const cpuFit = fits ? fit(carried.map((s) => s.daemon.cpuMsPerS), xs) : undefined;
  const rssFit = fits ? fit(carried.map((s) => s.daemon.rssMiB), xs) : undefined;
  const figures = {
    cpus: CPUS,
    cores: cpus.length,
    turns_per_step: TURNS,
    limits: { end_of_speech_to_first_audio_p95_ms: REPLY_LIMIT_MS, wake_lag_p95_ms: LAG_LIMIT_MS, wake_lag_growth_ms: GROWTH_LIMIT_MS },
    load_average_at_start: loadBefore,
    load_average_at_end: readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).map(Number),
    max_rooms_carried: most,
    rooms_per_core: round(most / cpus.length, 1),
    // contended: other processes used the core even on the last try, so the limit may be theirs.
    first_not_carried: first ? { rooms: first.rooms, why: first.why, contended: first.contended } : undefined,
    cpu_ms_per_s_per_room: cpuFit ? round(cpuFit.slope, 1) : undefined,
    rss_mib_per_room: rssFit ? round(rssFit.slope, 2) : undefined,
    rss_mib_intercept: rssFit ? round(rssFit.intercept, 0) : undefined,
    rss_mib_range: carried.length > 0 ? [Math.min(...carried.map((s) => s.daemon.rssMiB)), Math.max(...carried.map((s) => s.daemon.rssMiB))] : undefined,
    steps,
    overload: overloaded,
  };
  console.log(
    `rooms ramp: ${most} rooms carried on ${cpus.length} core(s) (${figures.rooms_per_core} a core)` +
      (first ? `; ${first.rooms} not (${first.why.join('; ')}${first.contended ? `; other processes used ${round(first.others_ms_per_s / 10, 0)} % of the core(s) meanwhile` : ''})` : '; every step carried') +
      (cpuFit ? `; each room ${round(cpuFit.slope / 10, 1)} % of a core (fitted over the carried steps)` : '') +
      (figures.rss_mib_range ? `; the daemon's peak RSS ${figures.rss_mib_range.join('–')} MiB over them (a room's own memory is below the run-to-run swing)` : ''),
  );
  writeResults(`rooms-ramp-${cpus.length === 1 ? '1core' : `${cpus.length}cores`}`, figures);
} finally {
  for (const d of daemons) if (d.exitCode === null) d.kill('SIGKILL');
  rmSync(work, { recursive: true, force: true });
}
