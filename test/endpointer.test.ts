import { describe, expect, it } from 'vitest';
import { Endpointer, type EndpointState } from '../src/pipeline/endpointer.js';

/** Feed a pattern of 0.1 s chunks: "s" speech, "." silence. The states after each chunk. */
function run(pattern: string, options?: ConstructorParameters<typeof Endpointer>[0]): { states: EndpointState[]; e: Endpointer } {
  const e = new Endpointer(options);
  return { states: [...pattern].map((c) => e.process(0.1, c === 's')), e };
}

describe('end of speech', () => {
  it.each([
    // pattern                         final state   started  ended
    ['...sssssssss.......', 'done', 0.3, 1.2],
    ['sssss..sssss.......', 'done', 0, 1.2], // a short pause does not end it
    ['s.s.s.s.s.s.s.s.s.s', 'waiting', undefined, undefined], // clicks never add up to speech
    ['..ss..ss..', 'waiting', undefined, undefined], // 0.2 s bursts: below the 0.3 s to start
    ['.'.repeat(50), 'no_speech', undefined, undefined],
    [`...${'s'.repeat(160)}`, 'too_long', 0.3, 15.3],
  ])('%s → %s', (pattern, final, started, ended) => {
    const { states, e } = run(pattern);
    expect(states.at(-1)).toBe(final);
    if (started === undefined) expect(e.startedAtS).toBeUndefined();
    else expect(e.startedAtS).toBeCloseTo(started, 5);
    if (ended === undefined) expect(e.endedAtS).toBeUndefined();
    else expect(e.endedAtS).toBeCloseTo(ended, 5);
  });

  it('stays final once done', () => {
    const { e } = run('ssss.......');
    expect(e.state).toBe('done');
    expect(e.process(0.1, true)).toBe('done');
  });

  it('takes its thresholds from options', () => {
    expect(run('ss...', { speechS: 0.2, silenceS: 0.3 }).states.at(-1)).toBe('done');
    expect(run('ssss....', { silenceS: 1 }).states.at(-1)).toBe('speaking');
  });

  it('measures the pause, and ends a whole command in it when told', () => {
    const { e } = run('ssss...');
    expect(e.state).toBe('speaking');
    expect(e.silenceS).toBeCloseTo(0.3, 5);
    e.complete();
    expect(e.state).toBe('complete');
    expect(e.endedAtS).toBeCloseTo(0.4, 5);
    expect(e.process(0.1, false)).toBe('complete');
    const waiting = run('...').e;
    waiting.complete(); // nothing said yet: nothing to end
    expect(waiting.state).toBe('waiting');
  });
});
