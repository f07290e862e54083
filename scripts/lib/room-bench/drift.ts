/** bench-room's two sound cards' clocks (IRIS_BENCH_DRIFT): one mode of scripts/bench-room.ts. */
import { SPEECH_FORMAT } from '../../../src/pipeline/audio.js';
import type { EchoCancellerOptions } from '../../../src/pipeline/echo.js';
import { createOpenWakeWord } from '../../../src/pipeline/wakeword.js';
import { random, round, writeResults } from '../bench.js';
import { RATE, PEOPLE, COMMANDS, IRIS_VOICE, REPLIES, sox, espeak, speechPower, addInto, toInt16, pink, type Room, licenceParagraphs, voiced, commandClip, stopClip, toMicLevel } from './room.js';
import type { RoomBenchOptions } from './options.js';
import { throughFrontEnd } from './front-end.js';

/**
 * Two sound cards' clocks (IRIS_BENCH_DRIFT="-300,-100,-50,0,50,100,300": the speaker's clock
 * against the microphone's, ppm; positive: the speaker runs fast, so the echo's delay shrinks).
 * A USB microphone and an onboard speaker each count samples by their own crystal (tens of ppm
 * off nominal, a few hundred at worst): the echo path is resampled by that much (sox `speed`,
 * after the room's reverb), over a long stretch of IRIS talking: an earlier reply, 2 s of
 * silence, then IRIS reading on for IRIS_BENCH_DRIFT_S (default 70 s; licence texts, as the stop
 * word's "talking on" mode) at IRIS_BENCH_DRIFT_DB echo-to-speech (default 0). Near its end the
 * person says "stop" (12 s before) and "hey jarvis, <command>" (6 s before). One canceller
 * throughout, as the daemon keeps it. Per 5 s: the delay the canceller uses against the echo's
 * true one, and ERLE (IRIS alone: the person's words left out). Per room: the person's "stop"
 * and wake word heard, self-stops and self-wakes, the delay changes the canceller took.
 * IRIS_BENCH_ECHO_OPTS (JSON `EchoCancellerOptions`) tries tracker settings. IRIS_BENCH_PARTS
 * (default dev); `--quick`: one voice. Writes scripts/results/room-drift.json (or IRIS_BENCH_NAME).
 */
export async function drift(options: RoomBenchOptions, ppmList: string): Promise<void> {
  const { quick, envParts } = options;
  const ppms = ppmList.split(',').map(Number);
  const parts = envParts;
  const longS = Number(process.env.IRIS_BENCH_DRIFT_S ?? 70);
  const esrDb = Number(process.env.IRIS_BENCH_DRIFT_DB ?? 0);
  const echoOptions = JSON.parse(process.env.IRIS_BENCH_ECHO_OPTS ?? '{}') as EchoCancellerOptions;
  const WINDOW_S = 5;
  const wakeDrift = await createOpenWakeWord({ model: 'hey_jarvis' });
  const paragraphsAll = licenceParagraphs();
  const rows: Record<string, unknown>[] = [];
  const table: Record<string, unknown>[] = [];
  for (const part of parts) {
    const rand = random(part === 'dev' ? 524 : 2524);
    const paragraphs = paragraphsAll.filter((_p, i) => i % 2 === (part === 'dev' ? 0 : 1));
    const voices = quick ? PEOPLE[part].slice(0, 1) : PEOPLE[part];
    for (const [v, voice] of voices.entries()) {
      // The same IRIS and person for every ppm: only the clocks differ.
      const earlier = espeak(REPLIES[v % REPLIES.length] ?? '', IRIS_VOICE[part]);
      const pieces: Int16Array[] = [];
      for (let i = 0, s = 0; s < longS; i++) {
        const speech = espeak(paragraphs[(v * 3 + i) % paragraphs.length] ?? '', IRIS_VOICE[part]);
        pieces.push(speech);
        s += speech.length / RATE;
      }
      const long = new Int16Array(Math.round(longS * RATE));
      for (let at = 0, i = 0; at < long.length; at += pieces[i]?.length ?? 0, i++) long.set((pieces[i] ?? new Int16Array(0)).subarray(0, long.length - at), at);
      const longAt = earlier.length + 2 * RATE;
      const length = longAt + long.length + 2 * RATE;
      const played = new Int16Array(length);
      played.set(earlier, 0);
      played.set(long, longAt);
      const command = COMMANDS[part][v % COMMANDS[part].length] ?? '';
      const wakeClip = commandClip(command, voice);
      const stopped = stopClip(voice);
      const stopAt = longAt + long.length - 12 * RATE;
      const wakeAt = longAt + long.length - 6 * RATE;
      const [stopFrom, stopTo] = voiced(stopped);
      const delay0 = Math.round(((40 + rand() * 160) * RATE) / 1000);
      const reverb = ['reverb', '50', '50', '60'];
      const personPower = speechPower(wakeClip);
      const people = new Float64Array(length);
      addInto(people, sox(stopped, reverb), stopAt);
      addInto(people, sox(wakeClip, reverb), wakeAt);
      const personS: [number, number][] = [[(stopAt + stopFrom) / RATE, (stopAt + stopTo) / RATE], [wakeAt / RATE, (wakeAt + wakeClip.length) / RATE]];
      for (const ppm of ppms) {
        // The echo: the room's reverb, then the two clocks (sox's resampler), `delay0` late at the start.
        const echo = sox(played, [...reverb, ...(ppm === 0 ? [] : ['speed', String(1 + ppm * 1e-6)])]);
        const mix = Float64Array.from(people);
        addInto(mix, echo, delay0, Math.sqrt((personPower * 10 ** (esrDb / 10)) / speechPower(echo.subarray(longAt, longAt + 30 * RATE))));
        const noise = pink(Math.min(length, 60 * RATE));
        const noiseGain = Math.sqrt(personPower / 10 ** (35 / 10) / speechPower(noise));
        for (let k = 0; k < length; k += noise.length) addInto(mix, noise, k, noiseGain);
        toMicLevel(mix);
        const r: Room = { mic: toInt16(mix), played, delayMs: (delay0 * 1000) / RATE };
        /** The echo's true delay at microphone sample `at` (ms): played sample k sounds at delay0 + k / (1 + ppm). */
        const trueMs = (at: number) => ((at - (at - delay0) * (1 + ppm * 1e-6)) * 1000) / RATE;
        const inPerson = (at: number, slackS = 0.5) => personS.some(([a, b]) => at / RATE >= a - 0.2 && at / RATE <= b + slackS);
        const windows: { t: number; trueMs: number; usedMs: number | null; erleDb: number | null; mic: number; out: number }[] = [];
        const changes: { t: number; ms: number }[] = [];
        let lastAt = 0;
        const front = await throughFrontEnd(options, r, {
          // The tracker's steps (the drift's rate moves the delay in between: `used` per window).
          options: { ...echoOptions, onDelay: (ms) => changes.push({ t: round(lastAt / RATE, 1), ms: round(ms, 1) }) },
          onChunk: (at, micIn, out, canceller) => {
            lastAt = at;
            const w = Math.floor(at / (WINDOW_S * RATE));
            while (windows.length <= w) windows.push({ t: windows.length * WINDOW_S, trueMs: round(trueMs((windows.length + 0.5) * WINDOW_S * RATE), 2), usedMs: null, erleDb: null, mic: 0, out: 0 });
            const win = windows[w];
            if (!win) return;
            win.usedMs = canceller.stats.delayMs === undefined ? null : round(canceller.stats.delayMs, 2);
            if (inPerson(at) || played.subarray(Math.max(0, at - delay0 - RATE / 4), at).every((x) => x === 0)) return; // IRIS alone, sounding
            for (let i = 0; i < micIn.length; i++) { win.mic += (micIn[i] ?? 0) ** 2; win.out += (out[i] ?? 0) ** 2; }
          },
        });
        for (const w of windows) w.erleDb = w.mic > 0 && w.out > 0 ? round(10 * Math.log10(w.mic / w.out), 1) : null;
        // The wake word over the cancelled stream, as the loop hears it.
        wakeDrift.reset();
        const wakes: number[] = [];
        for (let at = 0; at + 1280 <= front.samples.length; at += 1280) {
          const detection = await wakeDrift.process({ ...SPEECH_FORMAT, samples: front.samples.subarray(at, at + 1280), atS: at / RATE });
          if (detection) { wakes.push(round(detection.atS, 2)); wakeDrift.reset(); }
        }
        const heardIn = (times: number[], [a, b]: [number, number]) => times.some((t) => t >= a && t <= b + 0.5);
        const stopHeard = heardIn(front.stops, personS[0] ?? [0, 0]);
        const wakeHeard = heardIn(wakes, personS[1] ?? [0, 0]);
        const selfStops = front.stops.filter((t) => !personS.some((p) => heardIn([t], p))).length;
        const selfWakes = wakes.filter((t) => !personS.some((p) => heardIn([t], p))).length;
        const longFrom = Math.ceil(longAt / RATE / WINDOW_S);
        const longTo = Math.floor((longAt + long.length - 12 * RATE) / RATE / WINDOW_S); // before the person
        const inLong = windows.slice(longFrom, longTo).filter((w) => w.erleDb !== null);
        const errors = windows.filter((w) => w.usedMs !== null && w.t >= 5).map((w) => Math.abs((w.usedMs ?? 0) - w.trueMs));
        const row = {
          part, ppm, voice: `${voice.synth}:${voice.name}`, command, delay0Ms: round((delay0 * 1000) / RATE, 1),
          delayEndMs: round(trueMs(length), 1), stopHeard, wakeHeard, selfStops, selfWakes, stops: front.stops.map((t) => round(t, 2)), wakes,
          delayErrorMaxMs: round(Math.max(0, ...errors), 1), delayErrorEndMs: round(errors.at(-1) ?? NaN, 1),
          erleLongFirstDb: inLong[0]?.erleDb ?? null, erleLongLastDb: inLong.at(-1)?.erleDb ?? null,
          erleLongMinDb: inLong.length ? Math.min(...inLong.map((w) => w.erleDb ?? 0)) : null,
          erleLongMeanDb: inLong.length ? round(inLong.reduce((a, w) => a + (w.erleDb ?? 0), 0) / inLong.length, 1) : null,
          changes, windows: windows.map(({ mic: _m, out: _o, ...w }) => w),
        };
        rows.push(row);
        process.stderr.write(`${part} ${row.voice} ${ppm} ppm: delay ${row.delay0Ms} → ${row.delayEndMs} ms, used error max ${row.delayErrorMaxMs} ms (end ${row.delayErrorEndMs}), ${changes.length} changes; ERLE over the long reply first/last/min/mean ${row.erleLongFirstDb}/${row.erleLongLastDb}/${row.erleLongMinDb}/${row.erleLongMeanDb} dB; stop ${stopHeard ? 'heard' : 'missed'}, wake ${wakeHeard ? 'heard' : 'missed'}, self-stops ${selfStops}, self-wakes ${selfWakes}\n`);
      }
    }
    for (const ppm of ppms) {
      const set = rows.filter((r) => r.part === part && r.ppm === ppm) as { stopHeard: boolean; wakeHeard: boolean; selfStops: number; selfWakes: number; delayErrorMaxMs: number; erleLongFirstDb: number | null; erleLongLastDb: number | null; erleLongMinDb: number | null; erleLongMeanDb: number | null; changes: unknown[] }[];
      const mean = (xs: (number | null)[]) => { const ys = xs.filter((x): x is number => x !== null); return ys.length ? round(ys.reduce((a, b) => a + b, 0) / ys.length, 1) : null; };
      table.push({
        part, ppm, n: set.length, delay_error_max_ms: Math.max(...set.map((r) => r.delayErrorMaxMs)), changes: set.reduce((n, r) => n + r.changes.length, 0),
        erle_first_db: mean(set.map((r) => r.erleLongFirstDb)), erle_last_db: mean(set.map((r) => r.erleLongLastDb)), erle_min_db: mean(set.map((r) => r.erleLongMinDb)), erle_mean_db: mean(set.map((r) => r.erleLongMeanDb)),
        stop_heard: set.filter((r) => r.stopHeard).length, wake_heard: set.filter((r) => r.wakeHeard).length, self_stops: set.reduce((n, r) => n + r.selfStops, 0), self_wakes: set.reduce((n, r) => n + r.selfWakes, 0),
      });
    }
  }
  console.table(table);
  writeResults(process.env.IRIS_BENCH_NAME ?? 'room-drift', { parts, ppms, long_s: longS, esr_db: esrDb, echo_options: echoOptions, window_s: WINDOW_S, table, rows });
}
