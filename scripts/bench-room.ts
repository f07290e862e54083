/**
 * Hearing a person in a simulated room, over IRIS's own voice (issue 24). Each clip is a
 * recording a microphone would make while IRIS's speaker plays an earlier reply and then the
 * current one (espeak-ng), which a person (flite or festival) talks over: "hey jarvis,
 * <command>", or "stop". IRIS's audio reaches the microphone 40–200 ms late, through sox's
 * reverb, at an echo-to-speech ratio of −6…+18 dB, sometimes through a clipping speaker; the
 * person is reverberant too; some rooms add babble (pocketsphinx-testdata's LibriVox
 * recordings) and every room a little pink noise. What the speaker played is the reference.
 *
 * Every clip goes through the daemon's front end (pipeline/frontend.ts: speexdsp echo
 * cancellation with the measured delay, the stop word) and then the real voice loop
 * (openWakeWord, Silero, pocketsphinx with the grammar, the local conversation path); the same
 * clip without the front end is the baseline. Reported per condition, dev and held-out apart
 * (other person voices, other commands, other IRIS voice): wake word heard, command understood
 * (the right tool call), confidently wrong calls, "stop" heard, self-wakes and self-stops (IRIS
 * alone, saying "hey jarvis" and "stop" itself), ERLE, the front end's CPU per second of audio,
 * the latency it adds (it holds no audio back: its per-chunk processing time) and its memory.
 * False wakes over an hour of continuous speech: IRIS_BENCH_FALSE_WAKE_MIN (lib/room-bench/false-wakes.ts). Last word →
 * first reply audio in these rooms with early answers, the answer's own echo included:
 * IRIS_BENCH_EARLY=1. Two sound cards' clocks drifting apart over a long reply: IRIS_BENCH_DRIFT.
 * Why the wake word is missed, path by path (the person alone, the raw microphone, canceller
 * settings): IRIS_BENCH_WAKE_PATHS (lib/room-bench/wake-paths.ts). IRIS_BENCH_FILTER_MS tries another filter length in every mode,
 * IRIS_BENCH_CLIP_MODEL=0/1 the canceller without or with its clipping speaker's model (echo.ts `clipModel`).
 * The main bench's loop runs with the wake word's own-voice veto as the daemon does (IRIS_BENCH_OWN_VETO=0: without;
 * IRIS_BENCH_LOOK_NEAR_DB its level rule for a look's near miss); IRIS_BENCH_LOOKS=1 lists every detection in
 * each room instead (with IRIS_BENCH_WAKE_CHECK='{"fromScore":0.1,"maxFit":1e9}': every look). Held-out sets
 * made after one had been seen: IRIS_BENCH_HELDOUT2=1, …3 … …7 (room.ts `NEW_HELDOUT`), with `--part heldout`. IRIS_BENCH_ANSWER=yes|no: the person answers IRIS's "Did you say …?" and the loop runs with the daemon's gates (options.ts). IRIS_BENCH_STEADY=8: IRIS said eight replies in each echo room first (a canceller that has learned the room, not one in its second reply). IRIS_BENCH_FIRST=1: the person speaks into IRIS's first reply since a start; IRIS_BENCH_PRIMED=1|elsewhere (IRIS_BENCH_PRIMED_MOVED=ms): the canceller starts from the room it learned before (options.ts `primed`; the stop bench too).
 *
 * The canceller: `--echo webrtc` (or IRIS_BENCH_ECHO=webrtc) runs webrtc-audio-processing's AEC
 * instead of speexdsp (default: echo.ts `DEFAULT_ECHO_ENGINE`); IRIS_BENCH_WEBRTC='{"delayAgnostic":true}'
 * tries other webrtc settings (echo.ts `EchoCancellerOptions.webrtc`). A canceller that cannot
 * load fails the bench rather than falling back. The canceller's own CPU (without the stop word)
 * is reported apart: `canceller_cpu_s_per_s`.
 *
 * The daemon stops talking when it hears the wake word, so a command is mostly spoken over
 * silence: each command room is made twice, the second time with IRIS cut 0.2 s (IRIS_BENCH_CUT_S) after the
 * wake word the first pass heard (`--no-barge-in`: IRIS talks on, as in a plain recording).
 *
 * As the daemon, a command whose wake word came while IRIS sounded is "over speech" (the loop's
 * `overSpeech`: primed with 160 ms, the words over the echo (`echoTailS`, IRIS_BENCH_ECHO_TAIL_S)
 * scored on pocketsphinx's over-speech scale, acted on at `[stt] over_speech_confidence`). Every command
 * room counts toward the no-wrong rule (`summary.confident_wrong`, per part): echo, reverberant
 * rooms up to RT60 ~0.6 s, babble, babble in a reverberant room.
 *
 * Each mode is a file in scripts/lib/room-bench/ (room.ts the rooms they share, options.ts the
 * command line and environment); this file picks one.
 *
 * Run: `taskset -c 1 npx tsx scripts/bench-room.ts [--quick] [--no-barge-in] [--part dev]
 * [--no-baseline] [--reuse-front] [--echo webrtc]` (IRIS_BENCH_ONLY names conditions, IRIS_BENCH_NAME the
 * results file); writes scripts/results/room.json. Tune on `--part dev` only.
 */
import { drift } from './lib/room-bench/drift.js';
import { earlyRooms } from './lib/room-bench/early.js';
import { falseWakes } from './lib/room-bench/false-wakes.js';
import { roomBench } from './lib/room-bench/main.js';
import { roomBenchOptions } from './lib/room-bench/options.js';
import { ownWake } from './lib/room-bench/own-wake.js';
import { stopSweep } from './lib/room-bench/stop-sweep.js';
import { wakePaths } from './lib/room-bench/wake-paths.js';

const options = roomBenchOptions(process.argv, process.env);
const kwsSweep = process.env.IRIS_BENCH_KWS?.split(',').map(Number);
const falseWakeMin = Number(process.env.IRIS_BENCH_FALSE_WAKE_MIN ?? 0);

// One mode a run, chosen in this order (each mode's file says what it measures and writes).
if (kwsSweep) await stopSweep(options, kwsSweep);
else if (process.env.IRIS_BENCH_OWN_WAKE === '1') await ownWake(options);
else if (process.env.IRIS_BENCH_EARLY === '1') await earlyRooms(options);
else if (process.env.IRIS_BENCH_DRIFT !== undefined) await drift(options, process.env.IRIS_BENCH_DRIFT);
else if (process.env.IRIS_BENCH_WAKE_PATHS === '1') await wakePaths(options);
else if (falseWakeMin > 0) await falseWakes(options, falseWakeMin);
else await roomBench(options);
process.exit(0);
