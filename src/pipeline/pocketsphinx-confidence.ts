/**
 * How sure a pocketsphinx transcript is, 0–1: a grammar forces any speech into some command,
 * so the words alone cannot say whether it was one. Pure arithmetic over what the decodes
 * measured (pocketsphinx.ts runs them); scripts/tune-confidence.ts searches its parameters.
 */

/** A word (or silence) the decoder placed, in 10 ms frames, with its acoustic score. */
export interface Segment {
  word: string;
  startFrame: number;
  endFrame: number;
  acoustic: number;
}

/**
 * Two of the four measures behind a transcript's confidence (see `confidenceOf`), from the
 * grammar's words and an unconstrained phone loop's decode of the same audio
 * (context-independent phones, no language model: 40–60 ms for 3 s), per 10 ms frame:
 * - `fit`: how much worse the grammar's words score than the phone loop over the same frames
 *   (log base 1.0001, pocketsphinx's unit; right commands mostly 10–30, forced ones 20–70).
 * - `lost`: the share of the phone loop's speech frames after the first word that the grammar
 *   calls silence ("play some jazz music" became silence and "do it").
 */
export function measureFit(words: Segment[], phones: Segment[], echoFrames = 0): { fit: number; lost: number; echo?: Split; clean?: Split } {
  const isSilence = (word: string) => /^(?:<sil>|<s>|<\/s>|\[[A-Z]+\]|\+\+.*|\(NULL\)|SIL|\+.*)$/.test(word);
  const phoneScore = (from: number, to: number): number => {
    let total = 0;
    for (const p of phones) {
      const overlap = Math.min(to, p.endFrame) - Math.max(from, p.startFrame) + 1;
      if (overlap > 0) total += (p.acoustic * overlap) / (p.endFrame - p.startFrame + 1);
    }
    return total;
  };
  let gap = 0;
  let frames = 0;
  /** The words over IRIS's echo (their middle before `echoFrames`) and those after, apart. */
  const parts = { echo: { gap: 0, frames: 0 }, clean: { gap: 0, frames: 0 } };
  const silent = new Set<number>();
  let begun = false; // silence before the first word is pre-roll: the wake phrase, or earlier talk
  for (const w of words) {
    if (isSilence(w.word)) {
      if (!begun) continue;
      for (let f = w.startFrame; f <= w.endFrame; f++) silent.add(f);
      continue;
    }
    const n = w.endFrame - w.startFrame + 1;
    if (n <= 0) continue;
    begun = true;
    const wordGap = phoneScore(w.startFrame, w.endFrame) - w.acoustic;
    gap += wordGap;
    frames += n;
    const part = (w.startFrame + w.endFrame) / 2 < echoFrames ? parts.echo : parts.clean;
    part.gap += wordGap;
    part.frames += n;
  }
  let speech = 0;
  let lost = 0;
  for (const p of phones) {
    if (isSilence(p.word)) continue;
    for (let f = p.startFrame; f <= p.endFrame; f++) {
      speech += 1;
      if (silent.has(f)) lost += 1;
    }
  }
  const perFrame = (g: number, n: number) => (n === 0 ? Infinity : Math.round((g / n) * 10) / 10);
  const lostShare = speech === 0 ? 1 : lost / speech;
  const split = echoFrames > 0 ? { echo: { fit: perFrame(parts.echo.gap, parts.echo.frames), frames: parts.echo.frames }, clean: { fit: perFrame(parts.clean.gap, parts.clean.frames), frames: parts.clean.frames } } : {};
  return { fit: perFrame(gap, frames), lost: Math.round(lostShare * 1000) / 1000, ...split };
}

/** `fit` over some of a transcript's words, and how many 10 ms frames they span. */
export interface Split {
  fit: number;
  frames: number;
}

/** The measures behind a pocketsphinx transcript's confidence (reported as `details`). */
export interface Measures {
  /** See `measureFit`; Infinity when no word was heard. */
  fit: number;
  lost: number;
  /** How many of the perturbed decodes mean the same. */
  agreeing: number;
  /** How much the transcript's rival-set words beat their best rival, per frame (Infinity
   * when it has none). */
  margin: number;
  /** Heard over IRIS's voice (`StreamOptions.echoS`): the words over its echo and those after
   * (`measureFit`), and how many of the words over it are from a rival set. */
  echo?: Split & { rivals: number };
  clean?: Split;
}

export interface ScoreParams {
  /** Fit at or under this: full marks; at or over `fitBad`: none. */
  fitGood: number;
  fitBad: number;
  /** Each 1 % of speech lost costs this many % of the confidence. */
  lostWeight: number;
  /** Confidence kept for each perturbed decode that means something else. */
  perDisagreement: number;
  /** Margin (per frame) for full marks; less scales the confidence down. */
  marginGood: number;
  /** Over IRIS's echo: how much worse (per frame) the words heard over it may fit for the same
   * marks; not when a number or a place was heard there, nor when no word came after it.
   * Default 0. */
  echoAllowance?: number;
}

/**
 * Chosen on the development set of scripts/bench-understanding.ts (scripts/tune-confidence.ts
 * searches the grid): the most right answers with no wrong one at `[stt] min_confidence` 0.6,
 * and none at 0.5 either, for a margin of safety. The held-out set, never used to choose,
 * got no wrong answer with them either (README).
 */
export const SCORE_PARAMS: ScoreParams = { fitGood: 15, fitBad: 40, lostWeight: 2, perDisagreement: 2 / 3, marginGood: 3 };

/**
 * For words heard over IRIS's own voice (a stream told `echoS`): what the canceller leaves of
 * it costs the right words there a fit of 25–60, while after it they fit as in a quiet room
 * (15–25), so up to 40 per frame is forgiven over the echo; a rival word must win by 5 per
 * frame, not 3 ("ten" heard as "two" after the echo won by 2.4–2.8, right ones by 2.5–4.6).
 * Chosen on scripts/bench-room.ts's dev echo rooms (docs/room.md): the most right commands
 * with no wrong one at `[stt] over_speech_confidence` 0.7, nor at 0.6.
 */
export const OVER_SPEECH_PARAMS: ScoreParams = { ...SCORE_PARAMS, marginGood: 5, echoAllowance: 40 };

/**
 * Over a clipping speaker's echo (`StreamOptions.echoDistorted`) nothing is forgiven: the
 * allowance was chosen on rooms whose clipping speaker never let the wake word through, and with
 * the speaker's clip modelled a held-out "what time is it" heard as "list my timers" fit 52.6 over
 * the echo and scored 0.949 with it (docs/room.md, session 13).
 */
export const DISTORTED_ECHO_PARAMS: ScoreParams = { ...OVER_SPEECH_PARAMS, echoAllowance: 0 };

/**
 * Over IRIS's voice, the echo's end is an estimate (the wake word plus `echoS`: the speaker's
 * buffer, a 40–250 ms delay and the room's tail vary): a number or place starting up to this
 * many frames (0.2 s) after it counts as heard over the echo too. On bench-room's dev echo rooms
 * 20 frames cost no right command (23 of 72 either way), 40 cost 2.
 */
export const ECHO_END_GUARD = 20;

/**
 * How many numbers or places (words of a `rivals` set) were heard over the echo, which ends at
 * `echoFrames`, or start within `ECHO_END_GUARD` of its end: their fit is not forgiven (the
 * rival check has little to go on there, and a command's first words are lost there).
 */
export function rivalsOverEcho(words: readonly Segment[], echoFrames: number, rivals: readonly (readonly string[])[]): number {
  return words.filter((w) => w.startFrame < echoFrames + ECHO_END_GUARD && rivals.some((set) => set.includes(w.word.replace(/\(\d+\)$/, '')))).length;
}

const clamp01 = (x: number): number => Math.min(1, Math.max(0, x));

/** The fit with `allowance` per frame forgiven over the echo (`Measures.echo`). */
function fitOverEcho(echo: Split, clean: Split, allowance: number): number {
  const frames = echo.frames + clean.frames;
  const gap = (part: Split) => (part.frames === 0 ? 0 : part.fit * part.frames);
  return frames === 0 ? Infinity : (gap(echo) - allowance * echo.frames + gap(clean)) / frames;
}

/** A transcript's confidence, 0–1, from its measures. */
export function confidenceOf(m: Measures, perturbations: number, p: ScoreParams = SCORE_PARAMS): number {
  if (!Number.isFinite(m.fit)) return 0;
  const allowance = p.echoAllowance ?? 0;
  // Forgiven only when some words came after the echo, and none over it was a number or place.
  const forgive = m.echo !== undefined && m.clean !== undefined && m.clean.frames > 0 && m.echo.rivals === 0 && allowance > 0;
  const fit = forgive && m.echo && m.clean ? fitOverEcho(m.echo, m.clean, allowance) : m.fit;
  const byFit = clamp01((p.fitBad - fit) / (p.fitBad - p.fitGood)) * clamp01(1 - p.lostWeight * m.lost);
  const byAgreement = p.perDisagreement ** (perturbations - m.agreeing);
  const byMargin = Number.isFinite(m.margin) ? clamp01(m.margin / p.marginGood) : 1;
  return Math.round(byFit * byAgreement * byMargin * 1000) / 1000;
}
