/**
 * bench-room's command line and environment (scripts/bench-room.ts documents the modes), read
 * once and handed to each mode; with them the canceller under test, made as they set it.
 */
import { DEFAULT_ECHO_ENGINE, ECHO_ENGINES, EchoCanceller, FILTER_MS, LEARN_AFTER_S, type EchoCancellerOptions, type EchoEngineName, type EchoReference } from '../../../src/pipeline/echo.js';
import { REHEARSAL, type RehearsalOptions } from '../../../src/pipeline/rehearsal.js';
import type { StopWordOptions } from '../../../src/pipeline/stopword.js';
import { WAKE_CHECK, type WakeCheckOptions } from '../../../src/pipeline/wake-check.js';
import { LOOK_KNOWN_BELOW, LOOK_NEAR_DB, type OwnVoiceVetoOptions } from '../../../src/pipeline/wakeword.js';
import type { Part } from './room.js';

export interface RoomBenchOptions {
  quick: boolean;
  /** Model the daemon's barge-in: IRIS stops playing 0.2 s after the wake word is heard (`--no-barge-in`: it talks on, as a plain recording). */
  bargeIn: boolean;
  /** Only the conditions named (comma-separated, or ";" when a name holds a comma), e.g. IRIS_BENCH_ONLY="quiet,echo 0 dB". */
  only: string[] | undefined;
  /** The loop's pre-roll to try (seconds; the audio before the detection the recogniser gets), e.g. IRIS_BENCH_PREROLL_S=0.1. */
  preRollS: number | undefined;
  /** As the daemon: a wake word heard while IRIS's audio sounded is over speech (voice.ts `overSpeech`); IRIS_BENCH_OVER_SPEECH=0 turns it off. */
  overSpeechOn: boolean;
  /** Residual-echo suppression to try (dB, 0 = off, the default), e.g. IRIS_BENCH_SUPPRESS_DB=-40. */
  suppressDb: number | undefined;
  /** How long IRIS's echo lasts after a wake word over it, to try instead of the loop's default (voice.ts `echoTailS`, seconds), e.g. IRIS_BENCH_ECHO_TAIL_S=0.4. */
  echoTailS: number | undefined;
  /** `--part dev` (tuning: never the held-out part) or `--part heldout`; default both. */
  PARTS: Part[];
  /** IRIS_BENCH_PARTS (comma-separated; default dev): the parts of the modes other than the main bench. */
  envParts: Part[];
  /** `--no-baseline`: skip the raw microphone's run (half the time, while tuning the loop). */
  baselineOn: boolean;
  /** `--reuse-front`: keep each room's front-end output (after the barge-in cut) in the cache and
   * reuse it, so a change to the loop or the recogniser is measured without the front end again.
   * Only while the front end's code and settings are unchanged. */
  reuseFront: boolean;
  /** How long after the wake word the daemon cuts IRIS (seconds; default 0.2), e.g. IRIS_BENCH_CUT_S=0.36 with the own-voice veto's 160 ms hold. */
  bargeCutS: number;
  /** `--front-only` (with `--reuse-front`): only fill the cache, no command is heard, so nothing is measured (the held-out rooms made ahead of the one run that measures them). */
  frontOnly: boolean;
  /** `--echo webrtc` / IRIS_BENCH_ECHO: the canceller measured. */
  echoEngine: EchoEngineName;
  /** webrtc settings to try (JSON), e.g. IRIS_BENCH_WEBRTC='{"extendedFilter":false,"reportDelay":true}'. */
  webrtcSettings: EchoCancellerOptions['webrtc'] | undefined;
  /** The adaptive filter's length to try instead of echo.ts `FILTER_MS` (ms), e.g. IRIS_BENCH_FILTER_MS=128. */
  filterMs: number;
  /** The wake word's second look at near misses (wake-check.ts): IRIS_BENCH_WAKE_CHECK=0 turns it off, a JSON object tries other settings; default `WAKE_CHECK`. */
  wakeCheck: WakeCheckOptions | false;
  /** The wake word's own-voice veto in the main bench's loop, as the daemon runs it (voice.ts `ownVoice`, IRIS's own audio from the front end): IRIS_BENCH_OWN_VETO=0 turns it off. */
  ownVeto: boolean;
  /**
   * The own-voice veto's judging (wakeword.ts `OwnVoiceVetoOptions`, the daemon's defaults unless
   * set): IRIS_BENCH_LOOK_NEAR_DB (a look's near miss while IRIS plays must stand this far above the
   * residual echo; dB, "off": not judged), IRIS_BENCH_PLAIN_NEAR_DB (the same for a plain detection),
   * IRIS_BENCH_LOOK_KNOWN_BELOW (a look under this score needs the residual's level known; 0: not).
   */
  veto: Required<Pick<OwnVoiceVetoOptions, 'lookNearDb' | 'plainNearDb' | 'lookKnownBelow'>>;
  /** The clipping speaker's model on (1) or off (0) instead of echo.ts's default (`clipModel`), e.g. IRIS_BENCH_CLIP_MODEL=0. */
  clipModel: boolean | undefined;
  /** The stop word's options to try instead of its defaults (JSON), e.g. IRIS_BENCH_STOP_OPTIONS='{"lookAgain":false}'. */
  stopOptions: StopWordOptions;
  /** The stop spotters' `-kws_delay` to try instead of the default (frames), e.g. IRIS_BENCH_KWS_DELAY=5. */
  kwsDelay: number | undefined;
  /**
   * IRIS_BENCH_ANSWER=yes|no: the person answers IRIS's "Did you say …?" `answer` 3 s after the
   * command, and the loop runs with the daemon's own gates and follow-up window (`[stt]
   * clarify_confidence`: unsure words asked about), so a command counts as understood when it was
   * acted on at once or after the yes; "no": what a no does (nothing must act). Default: none (the
   * loop acts on everything and the gates are applied to what it did, as before).
   */
  answer: 'yes' | 'no' | undefined;
  /**
   * IRIS_BENCH_STEADY=N: IRIS said N replies in each echo room before its earlier one (the room's
   * replies in turn) — a daemon that has talked for a while, not one in its second reply. The main
   * bench cuts the recording after it (only the canceller hears it: front-end.ts `recorded`); the
   * stop and early-answer benches keep it in the room (self-stops over it count). Default 0.
   */
  steadyReplies: number;
  /** IRIS_BENCH_REHEARSAL=off | JSON of `RehearsalOptions` fields: the young canceller's rehearsal (rehearsal.ts) off or set otherwise. */
  rehearsal: RehearsalOptions | false | undefined;
  /**
   * IRIS_BENCH_PRIMED=1: the daemon started again in a room it had learned — each echo room's
   * canceller starts from what one learned there before (`RoomEcho`: the same room with IRIS saying
   * two more replies, the person in it too, as in a room that had been used; front-end.ts
   * `learnedBefore`). `elsewhere`: learned in another room (RT60 ~0.6, the speaker 12 dB louder,
   * another delay): a speaker moved, a card changed. IRIS_BENCH_PRIMED_MOVED=ms: the same room, its
   * delay that much longer than when it was learned (live it moved 1–13 ms between starts).
   */
  primed: { elsewhere: boolean; movedMs: number } | undefined;
  /** IRIS_BENCH_FIRST=1 (the main bench): the person speaks 0.8–1.8 s into IRIS's first reply since a start, with no reply before it. */
  firstReply: boolean;
  /** The canceller under test; one that cannot load fails the bench (a fallback would measure the other one). */
  makeCanceller: (reference: EchoReference, options?: EchoCancellerOptions) => Promise<EchoCanceller>;
}

const numberOr = (value: string | undefined): number | undefined => (value === undefined ? undefined : Number(value));

/** A level in dB from the environment: unset, the default; "off", -Infinity (not judged). */
const dbOrOff = (value: string | undefined, fallback: number): number => (value === undefined ? fallback : value === 'off' ? -Infinity : Number(value));

export function roomBenchOptions(argv: string[], env: NodeJS.ProcessEnv): RoomBenchOptions {
  const partArg = argv[argv.indexOf('--part') + 1];
  const echoArg = argv.includes('--echo') ? argv[argv.indexOf('--echo') + 1] : env.IRIS_BENCH_ECHO;
  const echoEngine: EchoEngineName = ECHO_ENGINES.find((e) => e === echoArg) ?? DEFAULT_ECHO_ENGINE;
  if (echoArg !== undefined && echoArg !== echoEngine) throw new Error(`--echo ${echoArg}: one of ${ECHO_ENGINES.join(', ')}`);
  const webrtcSettings = env.IRIS_BENCH_WEBRTC === undefined ? undefined : (JSON.parse(env.IRIS_BENCH_WEBRTC) as EchoCancellerOptions['webrtc']);
  const filterMs = Number(env.IRIS_BENCH_FILTER_MS ?? FILTER_MS);
  const clipModel = env.IRIS_BENCH_CLIP_MODEL === undefined ? undefined : env.IRIS_BENCH_CLIP_MODEL === '1';
  // IRIS_BENCH_LEARN=on (after `LEARN_AFTER_S`) or seconds: the room's response learned and taken off in the run (echo.ts `learnAfterS`).
  const learnAfterS = env.IRIS_BENCH_LEARN === undefined ? undefined : env.IRIS_BENCH_LEARN === 'on' ? LEARN_AFTER_S : Number(env.IRIS_BENCH_LEARN);
  const rehearsal = env.IRIS_BENCH_REHEARSAL === undefined ? undefined : env.IRIS_BENCH_REHEARSAL === 'off' ? false : { ...REHEARSAL, ...(JSON.parse(env.IRIS_BENCH_REHEARSAL) as Partial<RehearsalOptions>) };
  return Object.freeze({
    quick: argv.includes('--quick'),
    bargeIn: !argv.includes('--no-barge-in'),
    only: env.IRIS_BENCH_ONLY?.split(env.IRIS_BENCH_ONLY.includes(';') ? ';' : ','),
    preRollS: numberOr(env.IRIS_BENCH_PREROLL_S),
    overSpeechOn: env.IRIS_BENCH_OVER_SPEECH !== '0',
    steadyReplies: Number(env.IRIS_BENCH_STEADY ?? 0),
    answer: env.IRIS_BENCH_ANSWER === 'yes' || env.IRIS_BENCH_ANSWER === 'no' ? env.IRIS_BENCH_ANSWER : undefined,
    suppressDb: numberOr(env.IRIS_BENCH_SUPPRESS_DB),
    echoTailS: numberOr(env.IRIS_BENCH_ECHO_TAIL_S),
    PARTS: argv.includes('--part') ? [partArg === 'heldout' ? 'heldout' : 'dev'] : ['dev', 'heldout'],
    envParts: (env.IRIS_BENCH_PARTS ?? 'dev').split(',') as Part[],
    baselineOn: !argv.includes('--no-baseline'),
    reuseFront: argv.includes('--reuse-front'),
    bargeCutS: Number(env.IRIS_BENCH_CUT_S ?? 0.2),
    frontOnly: argv.includes('--front-only'),
    echoEngine,
    webrtcSettings,
    filterMs,
    clipModel,
    rehearsal,
    primed: env.IRIS_BENCH_PRIMED === '1' || env.IRIS_BENCH_PRIMED === 'elsewhere' ? { elsewhere: env.IRIS_BENCH_PRIMED === 'elsewhere', movedMs: Number(env.IRIS_BENCH_PRIMED_MOVED ?? 0) } : undefined,
    firstReply: env.IRIS_BENCH_FIRST === '1',
    wakeCheck: env.IRIS_BENCH_WAKE_CHECK === undefined ? WAKE_CHECK : env.IRIS_BENCH_WAKE_CHECK === '0' ? false : { ...WAKE_CHECK, ...(JSON.parse(env.IRIS_BENCH_WAKE_CHECK) as Partial<WakeCheckOptions>) },
    ownVeto: env.IRIS_BENCH_OWN_VETO !== '0',
    veto: {
      lookNearDb: dbOrOff(env.IRIS_BENCH_LOOK_NEAR_DB, LOOK_NEAR_DB),
      plainNearDb: dbOrOff(env.IRIS_BENCH_PLAIN_NEAR_DB, LOOK_NEAR_DB),
      lookKnownBelow: env.IRIS_BENCH_LOOK_KNOWN_BELOW === undefined ? LOOK_KNOWN_BELOW : Number(env.IRIS_BENCH_LOOK_KNOWN_BELOW),
    },
    stopOptions: JSON.parse(env.IRIS_BENCH_STOP_OPTIONS ?? '{}') as StopWordOptions,
    kwsDelay: numberOr(env.IRIS_BENCH_KWS_DELAY),
    makeCanceller: (reference: EchoReference, options: EchoCancellerOptions = {}): Promise<EchoCanceller> =>
      EchoCanceller.create(reference, { filterMs, ...(clipModel === undefined ? {} : { clipModel }), ...(rehearsal === undefined ? {} : { rehearsal }), ...(learnAfterS === undefined ? {} : { learnAfterS }), ...options, engine: echoEngine, ...(webrtcSettings ? { webrtc: webrtcSettings } : {}), onFallback: (reason) => { throw new Error(`the ${echoEngine} canceller did not load: ${reason}`); } }),
  } satisfies RoomBenchOptions);
}
