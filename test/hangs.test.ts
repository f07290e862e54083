// Nothing hangs: a model slower than timeout_s has its request closed (Ollama stops generating
// for nobody) and `iris ask` ends at once; a daemon stopping with an idle client and a turn in
// flight exits 0 at once and tells the client; a broken local tool is said, not guessed around.
import { connect } from 'node:net';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../src/log.js';
import { parseConfig } from '../src/config/load.js';
import { assemble } from '../src/daemon/assemble.js';
import { iris, startIris, waitForLine } from './helpers/cli.js';
import { withDouble, type Setup } from './helpers/conversation.js';
import { OllamaDouble } from './helpers/ollama-double.js';
import { tempDir } from './helpers/tmp.js';

let setup: Setup | undefined;
afterEach(async () => {
  await setup?.iris.stop();
  await setup?.double.close();
  setup = undefined;
});

const drain = async (turn: { sentences: AsyncIterable<string>; result: Promise<unknown> }) => {
  const said: string[] = [];
  for await (const sentence of turn.sentences) said.push(sentence);
  await turn.result;
  return said;
};

describe('a model slower than timeout_s', () => {
  it('has its HTTP request closed, even before the first token', async () => {
    setup = await withDouble({ ollama: { timeout_s: 0.3 } });
    setup.double.script({ content: ['Too late.'], firstTokenDelayMs: 30_000 });
    expect(await drain(setup.iris.conversation().turn('think hard'))).toEqual(['The model is taking too long to answer. Please try again.']);
    await expect.poll(() => setup?.double.cancelled).toBe(1);
  });

  it('after a tool ran: answers from the result, and closes the stalled follow-up', async () => {
    setup = await withDouble({ ollama: { timeout_s: 0.3 } });
    setup.double.script({ tool_calls: [{ name: 'calculator', arguments: { expression: '6*7' } }] }, { content: ['Late.'], firstTokenDelayMs: 30_000 });
    expect(await drain(setup.iris.conversation().turn('six sevens, slowly'))).toEqual(["The model didn't finish, but here is what I found: 42"]);
    await expect.poll(() => setup?.double.cancelled).toBe(1);
  });

  it('iris ask exits at once with its one line', async () => {
    const double = await new OllamaDouble().start();
    try {
      double.script({ content: ['Too late.'], firstTokenDelayMs: 60_000 });
      const dir = tempDir();
      writeFileSync(join(dir, 'config'), `[ollama]\nurl = "${double.url}"\ntimeout_s = 1\n`);
      const started = performance.now();
      const run = await iris(['ask', 'think hard'], { IRIS_CONFIG: join(dir, 'config'), IRIS_STATE_DIR: join(dir, 'state'), IRIS_SOCKET: join(dir, 's') });
      expect(run).toMatchObject({ code: 1, stdout: 'The model is taking too long to answer. Please try again.\n' });
      expect(run.stderr).toMatch(/did not answer within 1 s/);
      expect(performance.now() - started).toBeLessThan(10_000);
      await expect.poll(() => double.cancelled).toBe(1);
    } finally {
      await double.close();
    }
  });
});

describe('a local tool that breaks', () => {
  it('is said plainly; the request does not fall to the model', async () => {
    const file = join(tempDir(), 'not-a-dir');
    writeFileSync(file, '');
    const logs: string[] = [];
    const local = assemble(parseConfig('[assistant]\ntimezone = "UTC"\n[ollama]\nurl = "http://127.0.0.1:9"\n', 'test'), {
      stateDir: join(file, 'state'), // under a file: nothing can be written
      log: createLogger('test', { write: (line) => logs.push(line) }),
    });
    const result = await local.conversation().turn('set a timer for 5 minutes').result;
    expect(result).toMatchObject({ route: 'local', reply: expect.stringMatching(/^set_timer failed: .*(ENOTDIR|EEXIST)/) });
  });
});

describe('stopping the daemon', () => {
  it('closes an idle client, cancels a turn in flight and tells its client, and exits 0 at once', async () => {
    const double = await new OllamaDouble().start();
    const dir = tempDir();
    writeFileSync(join(dir, 'config'), `[assistant]\ntimezone = "UTC"\n[ollama]\nurl = "${double.url}"\ntimeout_s = 120\n`);
    const vars = { IRIS_CONFIG: join(dir, 'config'), IRIS_STATE_DIR: join(dir, 'state'), IRIS_SOCKET: join(dir, 'control.sock') };
    const daemon = startIris(['daemon'], vars);
    try {
      await waitForLine(daemon, /ready:/);
      const idle = connect(vars.IRIS_SOCKET);
      const idleClosed = new Promise<void>((resolve) => idle.on('close', () => resolve()));
      double.script({ content: ['Never.'], firstTokenDelayMs: 120_000 });
      const asking = iris(['ask', 'think for a long time'], vars);
      await expect.poll(() => double.chats.length, { timeout: 10_000 }).toBe(1);
      const started = performance.now();
      const exited = new Promise<number | null>((resolve) => daemon.once('exit', (code) => resolve(code)));
      daemon.kill('SIGTERM');
      expect(await exited).toBe(0);
      expect(performance.now() - started).toBeLessThan(5_000);
      await idleClosed;
      expect(await asking).toMatchObject({ code: 1, stderr: 'IRIS is stopping; the request was cancelled\n' });
      await expect.poll(() => double.cancelled).toBe(1);
    } finally {
      daemon.kill('SIGKILL');
      await double.close();
    }
  });
});
