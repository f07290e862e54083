/**
 * A command spoken over IRIS's own voice (issue 24, docs/room.md "Commands over IRIS's voice"):
 * the loop tells the recogniser how much of the command's audio has IRIS's echo under it, and
 * pocketsphinx scores the words there on a scale of their own.
 */
import { describe, expect, it } from 'vitest';
import { confidenceOf, ECHO_END_GUARD, measureFit, OVER_SPEECH_PARAMS, rivalsOverEcho, SCORE_PARAMS, type Measures, type Segment } from '../src/pipeline/pocketsphinx-confidence.js';
import { toldRecogniser } from './helpers/recogniser.js';

describe('a command heard over IRIS', () => {
  /** What the recogniser was told after "hey jarvis, what time is it". */
  const told = (overSpeech: boolean, echoTailS?: number) => toldRecogniser({ overSpeech: () => overSpeech, ...(echoTailS === undefined ? {} : { echoTailS }) });

  it('tells the recogniser how long IRIS\'s echo lies under the command: the pre-roll and echoTailS after the wake word', async () => {
    expect(await told(false)).toBeUndefined(); // a quiet room: nothing to tell
    const over = await told(true);
    // 160 ms of pre-roll up to the detection, then the default tail of 0.6 s.
    expect(over?.echoS).toBeGreaterThan(0.6);
    expect(over?.echoS).toBeLessThanOrEqual(0.76 + 1e-9);
    const short = await told(true, 0.2);
    expect(short?.echoS).toBeCloseTo((over?.echoS ?? 0) - 0.4, 5);
  }, 60_000);
});

describe('pocketsphinx confidence over IRIS\'s echo', () => {
  const seg = (word: string, startFrame: number, endFrame: number, acoustic: number): Segment => ({ word, startFrame, endFrame, acoustic });
  /** Phone-loop segments scoring 0 everywhere: a word's fit is then minus its own score per frame. */
  const phones = [seg('AH', 0, 199, 0)];

  it('measures the words over the echo and those after apart', () => {
    const words = [seg('<sil>', 0, 9, 0), seg('what', 10, 39, -30 * 30), seg('time', 40, 79, -40 * 10), seg('is', 80, 99, -20 * 10)];
    const all = measureFit(words, phones);
    expect(all.echo).toBeUndefined();
    const split = measureFit(words, phones, 50); // "what" (middle at frame 24.5) was over the echo, "time" (59.5) after
    expect(split.fit).toBe(all.fit);
    expect(split.echo).toEqual({ fit: 30, frames: 30 });
    expect(split.clean).toEqual({ fit: 10, frames: 60 });
  });

  // Shapes measured on bench-room's dev echo rooms (docs/room.md).
  const right: Measures = { fit: 27.3, lost: 0, agreeing: 2, margin: Infinity, echo: { fit: 45.6, frames: 59, rivals: 0 }, clean: { fit: 17.7, frames: 112 } };

  it('forgives the words over the echo what IRIS\'s residue costs them: a right command acts over speech', () => {
    expect(confidenceOf(right, 2)).toBeLessThan(0.7); // the quiet room's scale: not sure enough
    expect(confidenceOf(right, 2, OVER_SPEECH_PARAMS)).toBeGreaterThanOrEqual(0.7);
    const { echo: _echo, clean: _clean, ...untold } = right;
    expect(confidenceOf(untold, 2, OVER_SPEECH_PARAMS)).toBeLessThan(0.7); // not told where the echo was
  });

  it('counts a number starting just after the echo\'s estimated end as over it: that end is uncertain', () => {
    const numbers = [['six', 'eight', 'ten', 'two']];
    // "what is eight times eight" (held-out, echo -6 dB, 0.753 before): "eight" for "six" began right after the estimated end.
    const heard = [seg('what', 40, 60, 0), seg('is', 61, 70, 0), seg('eight', 71 + ECHO_END_GUARD - 1, 120, 0), seg('times', 121, 150, 0), seg('eight(2)', 151, 180, 0)];
    expect(rivalsOverEcho(heard, 71, numbers)).toBe(1);
    expect(rivalsOverEcho(heard, 71 - ECHO_END_GUARD, numbers)).toBe(0); // the echo ended well before the number
    expect(rivalsOverEcho(heard, Infinity, numbers)).toBe(2); // the whole command over the echo
  });

  it('does not forgive a number or place heard over the echo, and wants a rival word to win by more', () => {
    const numberOverEcho: Measures = { ...right, echo: { fit: 45.6, frames: 59, rivals: 1 }, margin: 6 };
    expect(confidenceOf(numberOverEcho, 2, OVER_SPEECH_PARAMS)).toBeLessThan(0.6);
    // "set a timer for ten minutes" heard as "two minutes" after the echo: clean, and "two" beat "ten" by 2.4.
    const tenAsTwo: Measures = { fit: 22.9, lost: 0, agreeing: 2, margin: 2.4, echo: { fit: 31.3, frames: 96, rivals: 0 }, clean: { fit: 15, frames: 101 } };
    expect(confidenceOf(tenAsTwo, 2, OVER_SPEECH_PARAMS)).toBeLessThan(0.6);
    expect(confidenceOf({ ...tenAsTwo, margin: 4.6 }, 2, OVER_SPEECH_PARAMS)).toBeGreaterThanOrEqual(0.7);
    const allOverEcho: Measures = { ...right, clean: { fit: Infinity, frames: 0 } };
    expect(confidenceOf(allOverEcho, 2, OVER_SPEECH_PARAMS)).toBeLessThan(0.6); // no word after the echo: nothing to go on
    expect(SCORE_PARAMS.echoAllowance ?? 0).toBe(0); // a quiet room's scale is unchanged
  });
});
