import { describe, expect, it } from 'vitest';
import { calculate } from '../tools/calculator.js';
import { nativeHost, text } from './helpers/tools.js';
import { tempDir } from './helpers/tmp.js';

async function value(expression: string): Promise<string> {
  const result = await calculate(expression);
  if (typeof result === 'string') throw new Error(result);
  return result.text;
}

async function failure(expression: string): Promise<string> {
  const result = await calculate(expression);
  if (typeof result !== 'string') throw new Error(`expected an error, got ${result.text}`);
  return result;
}

describe('calculator', () => {
  it.each([
    ['17% of 2,340', '397.8'],
    ['17 percent of 2340', '397.8'],
    ['2340 * 17%', '397.8'],
    ['12.5% of 80', '10'],
    ['(2 + 3) * 4', '20'],
    ['2^10', '1024'],
    ['3 times 4 plus 1', '13'],
    ['10 divided by 4', '2.5'],
    ['sqrt(16)', '4'],
    ['square root of 81', '9'],
    ['cube root of 27', '3'],
    ['nthRoot(32, 5)', '2'],
    ['1,000,000 / 8', '125000'],
    ['5 squared', '25'],
    ['10 mod 3', '1'],
    ['pi * 2', '6.28318530718'],
  ])('%s = %s', async (expression, expected) => {
    expect(await value(expression)).toBe(expected);
  });

  it.each([
    ['5 miles in km', '8.04672 km'],
    ['5 miles to km', '8.04672 km'],
    ['100 degF to degC', '37.777778 degC'],
    ['3 kg to lb', '6.6138679 lb'],
    ['2 hours to minutes', '120 minutes'],
  ])('converts %s', async (expression, expected) => {
    expect(await value(expression)).toBe(expected);
  });

  it.each([
    ['a = 5', /assignment is not/],
    ['f(x) = x^2', /functionassignment is not/],
    ['import({x: 1})', /"import" is not available/],
    ['evaluate("1+1")', /"evaluate" is not available/],
    ['createUnit("foo")', /"createUnit" is not available/],
    ['ones(10000, 10000)', /"ones" is not available/],
    ['combinations(1e9, 5e8)', /"combinations" is not available/],
    ['1:1e9', /range is not/],
    ['[1, 2, 3]', /array is not/],
    ['{a: 1}', /object is not/],
    ['true ? 1 : 2', /conditional is not/],
    ['cos.constructor("return process")()', /not/],
    ['9^9^9^9', /too large/],
    ['factorial(1e6)', /too large/],
    ['1 km + 1', /Cannot calculate/],
    ['love', /"love" is not a number/],
    ['(2 + 3', /Cannot read/],
    ['1+'.repeat(200), /longer than 300/],
    [Array.from({ length: 70 }, () => '1').join('+'), /too complex/],
  ])('refuses %s', async (expression, message) => {
    expect(await failure(expression)).toMatch(message);
  });

  it('survives fuzzing: every input gets a value or a reason, fast, and runs no code', async () => {
    const atoms = ['1', '2.5', 'e', 'pi', '+', '-', '*', '/', '^', '(', ')', ',', '%', 'sqrt', 'to', 'km', 'x', '=', ':', '[', ']',
      '{', '}', '"', "'", '.', 'constructor', '__proto__', 'process', 'import', 'factorial', '!', '?', ';', '\n', '1e308'];
    let seed = 42;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const started = performance.now();
    for (let i = 0; i < 2000; i++) {
      const input = Array.from({ length: 1 + Math.floor(next() * 25) }, () => atoms[Math.floor(next() * atoms.length)]).join(next() < 0.5 ? '' : ' ');
      const result = await calculate(input);
      expect(typeof result === 'string' || typeof result.text === 'string').toBe(true);
    }
    expect(globalThis).not.toHaveProperty('x');
    // 2,000 inputs well under a few seconds: nothing loops on its input.
    expect(performance.now() - started).toBeLessThan(10_000);
  });

  it('is a tool: isError with the reason, structured result otherwise', async () => {
    const { host } = nativeHost(tempDir());
    const ok = await host.call('calculator', { expression: '17% of 2340' });
    expect(ok).toEqual({ content: [{ type: 'text', text: '397.8' }], structuredContent: { expression: '(17 / 100) * 2340', result: 397.8 } });
    const bad = await host.call('calculator', { expression: 'a=1' });
    expect(bad.isError).toBe(true);
    expect(text(bad)).toMatch(/assignment/);
  });
});
