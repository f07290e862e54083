import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { errorResult, textResult, type NativeTool } from '../src/toolhost/api.js';
import { ToolHost } from '../src/toolhost/host.js';
import { text } from './helpers/tools.js';

const echo: NativeTool = {
  name: 'echo',
  description: 'Echo a word.',
  inputSchema: { type: 'object', properties: { word: { type: 'string' }, times: { type: 'integer', minimum: 1 } }, required: ['word'], additionalProperties: false },
  run: (args) => textResult(String(args.word).repeat(Number(args.times ?? 1))),
};

function tool(name: string, run: NativeTool['run']): NativeTool {
  return { name, description: name, inputSchema: { type: 'object' }, run };
}

afterEach(() => vi.useRealTimers());

describe('ToolHost', () => {
  it('registers, lists, calls and unregisters', async () => {
    const host = new ToolHost();
    host.register(echo);
    expect(host.list()).toEqual([expect.objectContaining({ name: 'echo', source: 'native', enabled: true })]);
    expect(await host.call('echo', { word: 'hi', times: 2 })).toEqual({ content: [{ type: 'text', text: 'hihi' }] });
    expect(() => host.register(echo)).toThrow(/already registered/);
    expect(host.unregister('echo')).toBe(true);
    expect(host.list()).toEqual([]);
  });

  it('answers an unknown tool with the tools that exist', async () => {
    const host = new ToolHost();
    host.register(echo);
    const result = await host.call('get_weather', {});
    expect(result.isError).toBe(true);
    expect(text(result)).toBe('There is no tool named "get_weather". Available tools: echo.');
  });

  it('validates arguments against the schema with a message the model can act on', async () => {
    const host = new ToolHost();
    host.register(echo);
    const missing = await host.call('echo', {});
    expect(missing.isError).toBe(true);
    expect(text(missing)).toBe('Invalid arguments for echo: "word" is required. Usage: echo(word: string, times?: integer).');
    const wrong = await host.call('echo', { word: 'x', times: 0, colour: 'red' });
    expect(text(wrong)).toContain('"colour" is not a known argument');
    expect(text(wrong)).toContain('"times" must be >= 1');
  });

  it('parses arguments sent as a JSON string, and rejects junk', async () => {
    const host = new ToolHost();
    host.register(echo);
    expect(text(await host.call('echo', '{"word":"ok"}'))).toBe('ok');
    expect(text(await host.call('echo', '{word:'))).toMatch(/not valid JSON/);
    expect(text(await host.call('echo', [1, 2]))).toMatch(/must be a JSON object/);
    expect(text(await host.call('echo', { word: 'x'.repeat(20_000) }))).toMatch(/longer than/);
  });

  it('does not offer or run a tool that is switched off', async () => {
    let on = true;
    const host = new ToolHost({ isEnabled: () => on });
    host.register(echo, { toggle: 'echoes' });
    host.register(tool('other', () => textResult('other')));
    on = false;
    expect(host.definitions().map((d) => d.name)).toEqual(['other']);
    expect(host.list().find((t) => t.name === 'echo')?.enabled).toBe(false);
    const result = await host.call('echo', { word: 'x' });
    expect(result.isError).toBe(true);
    expect(text(result)).toBe('The tool "echo" is switched off. Available tools: other.');
  });

  it('turns a thrown error into an isError result', async () => {
    const host = new ToolHost();
    host.register(tool('boom', () => {
      throw new Error('disk on fire');
    }));
    host.register(tool('bad', () => ({}) as never));
    expect(await host.call('boom', {})).toEqual({ ...errorResult('boom failed: disk on fire'), failed: true }); // broke, as opposed to refusing bad input
    expect(await host.call('bad', {})).toEqual(errorResult('the tool returned no content.'));
  });

  it('times out a hung tool and aborts its signal', async () => {
    vi.useFakeTimers();
    const host = new ToolHost({ timeoutMs: 5_000 });
    let seen: AbortSignal | undefined;
    host.register(tool('hang', (_args, { signal }) => {
      seen = signal;
      return new Promise(() => undefined);
    }));
    const pending = host.call('hang', {});
    await vi.advanceTimersByTimeAsync(5_000);
    expect(await pending).toEqual({ ...errorResult('hang timed out after 5 s.'), failed: true });
    expect(seen?.aborted).toBe(true);
  });

  it('takes a time limit past what a Node timer holds as the longest it holds, not 1 ms', async () => {
    vi.useFakeTimers(); // vitest's fake timers fire an overflowing delay after 1 ms, as Node does
    const host = new ToolHost({ timeoutMs: 3_000_000 * 1000 });
    host.register(tool('slow', () => new Promise((resolve) => setTimeout(() => resolve(textResult('done')), 60_000))));
    const pending = host.call('slow', {});
    await vi.advanceTimersByTimeAsync(60_000);
    expect(await pending).toEqual(textResult('done'));
  });

  it('compiles a schema registered again and again once: the MCP meta-tools are, at every change of the servers', () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const host = new ToolHost();
    const again = () => {
      for (let i = 0; i < 2_000; i++) {
        host.unregister('echo');
        host.register({ ...echo, inputSchema: structuredClone(echo.inputSchema) }); // a new schema object each time, as metaTools() makes
      }
      gc();
      return process.memoryUsage().heapUsed;
    };
    const first = again();
    const grownBytes = again() - first;
    expect(grownBytes).toBeLessThan(1024 * 1024); // every compiled validator kept: ~8 MB
  });

  it('cancels through the turn signal, before and during a call', async () => {
    const host = new ToolHost();
    host.register(tool('hang', () => new Promise(() => undefined)));
    const turn = new AbortController();
    const pending = host.call('hang', {}, { signal: turn.signal });
    turn.abort();
    expect(await pending).toEqual(errorResult('hang was cancelled.'));
    expect(await host.call('hang', {}, { signal: turn.signal })).toEqual(errorResult('hang was cancelled.'));
  });

  it('survives fuzzed arguments: never throws, always a result', async () => {
    const host = new ToolHost();
    host.register(echo);
    const samples: unknown[] = [null, undefined, 0, -1, NaN, true, '', ' ', 'null', '[]', '{"word":1}', '{"__proto__":{"x":1}}',
      { word: { toString: 'x' } }, { constructor: { prototype: {} } }, '\u0000\uffff', Symbol.iterator.toString()];
    for (let i = 0; i < 300; i++) {
      samples.push(String.fromCharCode(...Array.from({ length: (i % 40) + 1 }, (_v, k) => (i * 7919 + k * 104729) % 0x2fff)));
    }
    for (const sample of samples) {
      const result = await host.call('echo', sample);
      expect(Array.isArray(result.content)).toBe(true);
    }
  });
});
