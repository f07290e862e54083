import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { iris, irisWithInput, irisWithStdoutClosed, startIris, waitForLine } from './helpers/cli.js';
import { connect } from 'node:net';
import { closedPort } from './helpers/net.js';
import { encodeEvent, EventReader } from '../src/wyoming/events.js';
import { request } from '../src/daemon/control.js';
import { EVERYTHING, FILESYSTEM, fake, serversToml, stdio } from './helpers/mcp.js';
import { OllamaDouble } from './helpers/ollama-double.js';
import { tempDir } from './helpers/tmp.js';
import { commandWav } from './helpers/speech.js';

function env(config = '') {
  const dir = tempDir();
  writeFileSync(join(dir, 'config'), config);
  // Each test's own socket path: a daemon elsewhere on the machine never answers for it.
  return { dir, vars: { IRIS_CONFIG: join(dir, 'config'), IRIS_STATE_DIR: join(dir, 'state'), IRIS_SOCKET: join(dir, 'control.sock') } };
}

describe('iris CLI', () => {
  it('ask answers time and arithmetic on the local path, as JSON', async () => {
    const { vars } = env('[assistant]\ntimezone = "Europe/Berlin"\n');
    const [time, math] = await Promise.all([
      iris(['ask', '--json', 'what time is it in Tokyo'], vars),
      iris(['ask', 'what is 17% of 2,340'], vars),
    ]);
    expect(time.code).toBe(0);
    const answer = JSON.parse(time.stdout) as Record<string, unknown>;
    expect(answer).toMatchObject({ route: 'local', tool_calls: [{ name: 'get_current_time', arguments: { timezone: 'tokyo' }, result: { isError: false } }] });
    expect(answer.reply).toMatch(/^It's \d{1,2}:\d{2} [AP]M in Tokyo\.$/);
    expect(answer).toHaveProperty('tokens.num_ctx');
    expect(answer).toHaveProperty('timings_ms.total');
    expect(math).toMatchObject({ code: 0, stdout: "That's 397.8.\n" });
  });

  it('ask goes to the model and prints its answer; JSON has the contract fields', async () => {
    const double = await new OllamaDouble().start();
    try {
      double.script(
        { tool_calls: [{ name: 'calculator', arguments: { expression: '2^16' } }] },
        { content: ['That is ', '65,536.'] },
        { content: ['Roses are red.'] },
      );
      const { vars } = env(`[ollama]\nurl = "${double.url}"\n`);
      const json = await iris(['ask', '--json', 'how many values fit in sixteen bits'], vars);
      expect(json.code).toBe(0);
      const answer = JSON.parse(json.stdout) as Record<string, unknown>;
      expect(answer).toMatchObject({ reply: 'That is 65,536.', route: 'llm', tool_calls: [{ name: 'calculator', arguments: { expression: '2^16' }, result: { isError: false } }] });
      for (const key of ['system', 'tools', 'history', 'tool_results', 'prompt_estimate', 'prompt_eval_count', 'budget', 'num_ctx']) {
        expect(answer).toHaveProperty(`tokens.${key}`);
      }
      expect(answer).toHaveProperty('timings_ms.first_token');
      expect(await iris(['ask', 'write me a poem'], vars)).toMatchObject({ code: 0, stdout: 'Roses are red.\n' });
    } finally {
      await double.close();
    }
  });

  it('ask exits 1 with a one-line reason when Ollama is down, and still answers locally', async () => {
    const port = await closedPort();
    const { vars } = env(`[ollama]\nurl = "http://127.0.0.1:${port}"\n`);
    const [down, local] = await Promise.all([iris(['ask', 'write me a poem'], vars), iris(['ask', 'what time is it'], vars)]);
    expect(down.code).toBe(1);
    expect(down.stdout).toBe(`I can't reach the language model at http://127.0.0.1:${port}. I can still tell the time, do arithmetic and set timers.\n`);
    expect(down.stderr).toBe(`cannot reach Ollama at http://127.0.0.1:${port} (ECONNREFUSED)\n`);
    expect(local.code).toBe(0);
  });

  it('chat keeps a conversation over several lines of input', async () => {
    const double = await new OllamaDouble().start();
    try {
      double.script({ content: ['Hello, Ada.'] }, { content: ['Your name is Ada.'] });
      const { vars } = env(`[ollama]\nurl = "${double.url}"\n`);
      const run = await irisWithInput(['chat'], vars, 'my name is Ada\nwhat is my name?\n/quit\n');
      expect(run.stdout).toBe('iris> Hello, Ada.\niris> Your name is Ada.\n');
      expect(double.chats[1]?.messages.map((m) => m.content)).toContain('my name is Ada');
    } finally {
      await double.close();
    }
  });

  it('config check prints every problem as FILE:LINE and exits 78', async () => {
    const { vars } = env('[ollama]\nurl = "localhost"\n[tools]\ntime = "yes"\n');
    const [check, ask] = await Promise.all([iris(['config', 'check'], vars), iris(['ask', 'what time is it'], vars)]);
    expect(check.code).toBe(78);
    expect(check.stderr).toBe(
      `${vars.IRIS_CONFIG}:2: "ollama.url" = "localhost" is not an http:// or https:// URL\n`
      + `${vars.IRIS_CONFIG}:4: "tools.time" must be a boolean, not a string ("yes")\n`,
    );
    expect(ask.code).toBe(78);
    const huge = env('[tools]\ntimeout_s = 3000000\n'); // once every call "timed out after 3000000 s" at 1 ms
    expect(await iris(['config', 'check'], huge.vars)).toMatchObject({ code: 78, stderr: `${huge.vars.IRIS_CONFIG}:2: "tools.timeout_s" = 3000000 is more than 600: the native tools answer within milliseconds\n` });
    const good = env('[tools]\ntime = false\n');
    expect(await iris(['config', 'check'], good.vars)).toMatchObject({ code: 0, stdout: `${good.vars.IRIS_CONFIG}: OK\n` });
  });

  it('tools list and budget show every native tool, its switch and its token cost', async () => {
    const { vars } = env('[tools]\ncalculator = false\n');
    const [list, budget] = await Promise.all([iris(['tools', 'list', '--json'], vars), iris(['tools', 'budget', '--json'], vars)]);
    const tools = JSON.parse(list.stdout) as { name: string; source: string; enabled: boolean; tokens: number }[];
    expect(tools.map((t) => t.name)).toEqual(['get_current_time', 'calculator', 'set_timer', 'set_reminder', 'list_timers', 'cancel_timer']);
    expect(tools.every((t) => t.source === 'native' && t.tokens > 10 && t.tokens < 120)).toBe(true);
    expect(tools.find((t) => t.name === 'calculator')?.enabled).toBe(false);
    const report = JSON.parse(budget.stdout) as Record<string, unknown>;
    const enabledTokens = tools.filter((t) => t.enabled).reduce((sum, t) => sum + t.tokens, 0);
    expect(report).toMatchObject({ budget: 1500, exposed_tokens: enabledTokens, native_tokens: enabledTokens, remote_tools: 0 });
    expect(report.tokenizer).toMatch(/qwen/i);
  });

  it('tools call runs a tool, exits 1 on isError and 2 on bad JSON', async () => {
    const { vars } = env('[tools]\ncalculator = false\n');
    const [ok, off, unknown, junk] = await Promise.all([
      iris(['tools', 'call', 'get_current_time', '{"timezone":"UTC"}', '--json'], vars),
      iris(['tools', 'call', 'calculator', '{"expression":"1+1"}', '--json'], vars),
      iris(['tools', 'call', 'rm_rf', '{}'], vars),
      iris(['tools', 'call', 'get_current_time', '{nope'], vars),
    ]);
    expect(ok.code).toBe(0);
    expect(JSON.parse(ok.stdout)).toMatchObject({ content: [{ type: 'text', text: expect.stringMatching(/ in UTC\.$/) }] });
    expect(off.code).toBe(1);
    expect(JSON.parse(off.stdout)).toMatchObject({ isError: true });
    expect(unknown).toMatchObject({ code: 1, stdout: expect.stringContaining('There is no tool named "rm_rf"') });
    expect(junk.code).toBe(2);
  });

  it('ask with empty TEXT is a usage error, before anything runs', async () => {
    const { vars } = env();
    for (const text of ['', '   ']) {
      const run = await iris(['ask', text], vars);
      expect(run).toMatchObject({ code: 2, stdout: '' });
      expect(run.stderr).toContain('TEXT is empty');
    }
  });

  it('tools call names a missing or switched-off server, and a tool its server lacks', async () => {
    const none = env();
    const [missing, missingJson] = await Promise.all([
      iris(['tools', 'call', 'files.list_directory', '{"path":"/"}'], none.vars),
      iris(['tools', 'call', 'files.list_directory', '{"path":"/"}', '--json'], none.vars),
    ]);
    expect(missing).toMatchObject({ code: 1, stdout: 'There is no MCP server "files" in the config (none is configured). A remote tool is called as SERVER.TOOL.\n' });
    expect(JSON.parse(missingJson.stdout)).toMatchObject({ isError: true, content: [{ type: 'text', text: expect.stringContaining('no MCP server "files"') }] });
    const root = tempDir();
    const { vars } = env(serversToml({ fs: stdio(FILESYSTEM, root), off: { ...stdio(FILESYSTEM, root), enabled: false } }));
    const [other, off, noTool] = await Promise.all([
      iris(['tools', 'call', 'files.list_directory', '{}'], vars),
      iris(['tools', 'call', 'off.list_directory', '{}'], vars),
      iris(['tools', 'call', 'fs.fly_away', '{}'], vars),
    ]);
    expect(other).toMatchObject({ code: 1, stdout: expect.stringContaining('There is no MCP server "files" in the config (servers: fs, off)') });
    expect(off).toMatchObject({ code: 1, stdout: expect.stringContaining('The MCP server "off" is switched off') });
    expect(noTool.code).toBe(1);
    expect(noTool.stdout).toMatch(/^The server "fs" has no tool "fly_away"\. Its tools: .*list_directory/);
  });

  it('listen checks --out before running, and says in --help that it carries out what it hears', async () => {
    const { dir, vars } = env();
    const wav = commandWav('set a timer for five minutes');
    for (const [out, why] of [[join(dir, 'missing', 'x.wav'), 'does not exist'], [dir, 'it is a directory']] as const) {
      const run = await iris(['listen', '--file', wav, '--out', out], vars);
      expect(run).toMatchObject({ code: 2, stdout: '' });
      expect(run.stderr).toContain(`cannot write --out ${out}: `);
      expect(run.stderr).toContain(why);
    }
    expect(existsSync(join(dir, 'state', 'timers.json'))).toBe(false); // nothing ran
    const help = (await iris(['listen', '--help'], vars)).stdout.replace(/\s+/g, ' ');
    expect(help).toContain('It carries out what it hears, as the daemon would: timers and reminders are set and tools called');
    expect(help).toContain('--dry-run');
  });

  it('listen --dry-run says what it would do and calls no tool that changes anything', async () => {
    const { dir, vars } = env();
    const stages = ['--start', 'stt', '--end', 'conversation', '--json'];
    const dry = await iris(['listen', '--file', commandWav('set a timer for five minutes'), ...stages, '--dry-run'], vars);
    expect(dry.code).toBe(0);
    const report = JSON.parse(dry.stdout) as { reply: string; tool_calls: { name: string; result: { structuredContent?: unknown } }[] };
    expect(report.reply).toBe('Dry run: I would call set_timer with {"duration":"5 minutes"}; nothing was done.');
    expect(report.tool_calls).toMatchObject([{ name: 'set_timer', result: { isError: true, structuredContent: { dry_run: true } } }]);
    expect(JSON.parse((await iris(['timers', 'list', '--json'], vars)).stdout)).toEqual([]);
    // Read-only tools still answer.
    const time = await iris(['listen', '--file', commandWav('what time is it in tokyo'), ...stages, '--dry-run'], vars);
    expect((JSON.parse(time.stdout) as { reply: string }).reply).toMatch(/^It's .* in Tokyo\.$/);
    // Without it, the timer is set.
    await iris(['listen', '--file', commandWav('set a timer for five minutes'), ...stages], vars);
    expect(JSON.parse((await iris(['timers', 'list', '--json'], vars)).stdout)).toEqual([expect.objectContaining({ kind: 'timer', duration_s: 300 })]);
    expect(existsSync(join(dir, 'state'))).toBe(true);
  });

  it('timers list and cancel work against the state dir', async () => {
    const { vars } = env();
    expect((await iris(['ask', 'set a tea timer for 5 minutes'], vars)).stdout).toBe('Tea timer set for 5 minutes.\n');
    const listed = await iris(['timers', 'list', '--json'], vars);
    expect(JSON.parse(listed.stdout)).toEqual([expect.objectContaining({ id: '1', kind: 'timer', label: 'tea', duration_s: 300 })]);
    expect(await iris(['timers', 'cancel', '1'], vars)).toMatchObject({ code: 0, stdout: 'Cancelled the timer "tea".\n' });
    expect(await iris(['timers', 'cancel', '1'], vars)).toMatchObject({ code: 1 });
    // A reminder's words (a model's or a peer's) with escape codes: shown, never acted on by the terminal.
    const text = JSON.stringify({ at: 'in 1 hour', text: 'call \u001b[2J\u001b]0;pwned\u0007\u009b31m\u202emom' });
    expect((await iris(['tools', 'call', 'set_reminder', text], vars)).code).toBe(0);
    const listed2 = await iris(['timers', 'list'], vars);
    expect(listed2.stdout).toContain('call \\x1b[2J\\x1b]0;pwned\\x07\\x9b31m\\u202emom');
    expect(listed2.stdout).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202e]/);
  });

  it('doctor checks Ollama and starts each MCP server; tools budget counts the proxy against direct', async () => {
    const port = await closedPort();
    const servers = serversToml({ everything: stdio(EVERYTHING, 'stdio'), broken: { command: '/nonexistent/mcp' } });
    const { vars } = env(`[ollama]\nurl = "http://127.0.0.1:${port}"\n${servers}`);
    const [doctor, budget, list] = await Promise.all([
      iris(['doctor'], vars), iris(['tools', 'budget', '--json'], vars), iris(['tools', 'list', '--json'], vars),
    ]);
    expect(doctor.code).toBe(1);
    expect(doctor.stdout).toContain(`✗ Ollama: cannot reach Ollama at http://127.0.0.1:${port} (ECONNREFUSED)`);
    expect(doctor.stdout).toContain('✓ MCP server everything: up over stdio, 15 tools');
    expect(doctor.stdout).toMatch(/✗ MCP server broken: restarting, 0 tools \(spawn \/nonexistent\/mcp ENOENT\)/);
    const report = JSON.parse(budget.stdout) as Record<string, number>;
    expect(report.remote_tools).toBe(14); // the task-only tool is hidden; the two elicitation ones are there
    expect(report.meta_tools_tokens).toBeGreaterThan(50);
    expect(report.meta_tools_tokens).toBeLessThanOrEqual(250);
    expect(report.exposed_tokens).toBe((report.native_tokens ?? 0) + (report.meta_tools_tokens ?? 0));
    expect(report.reduction).toBeGreaterThan(0.85);
    const rows = JSON.parse(list.stdout) as { name: string; source: string; server?: string; enabled: boolean }[];
    expect(rows).toContainEqual(expect.objectContaining({ name: 'everything.get-sum', source: 'mcp', server: 'everything', enabled: true }));
    expect(rows).toContainEqual(expect.objectContaining({ name: 'everything.simulate-research-query', enabled: false }));
  });

  it('ends quietly when the reader of its output has gone (| head -1): no EPIPE, no stack trace', async () => {
    const { vars } = env('[assistant]\ntimezone = "UTC"\n');
    const commands = [['tools', 'list'], ['config', 'defaults'], ['--help'], ['ask', 'what time is it'], ['timers', 'list', '--json']];
    const runs = await Promise.all(commands.map((args) => irisWithStdoutClosed(args, vars)));
    runs.forEach((run, i) => expect(run, commands[i]?.join(' ')).toEqual({ code: 0, stderr: '' }));
  });

  it('exits 2 on a usage error', async () => {
    const [bad, missing] = await Promise.all([iris(['frobnicate'], {}), iris(['tools', 'call'], {})]);
    expect(bad.code).toBe(2);
    expect(missing.code).toBe(2);
  });

  it('a failure is its reason on one plain line of stderr and exit 1, whatever the command threw', async () => {
    const { dir, vars } = env();
    const wav = join(dir, 'no-such-dir', 'x.wav');
    const [say, listen] = await Promise.all([iris(['say', '--out', wav, 'hello'], vars), iris(['listen', '--file', wav], vars)]);
    expect(say).toEqual({ code: 1, stdout: '', stderr: `ENOENT: no such file or directory, open '${wav}'\n` });
    expect(listen).toEqual({ code: 1, stdout: '', stderr: `ENOENT: no such file or directory, open '${wav}'\n` });
  });
});

describe('iris daemon', () => {
  it('reports missed timers, fires new ones set from the CLI, keeps its config on a bad SIGHUP, stops on SIGTERM', async () => {
    const { vars } = env('[assistant]\ntimezone = "UTC"\n');
    const past = new Date(Date.now() - 3_600_000).toISOString();
    const state = { version: 1, next_id: 2, timers: [{ id: '1', kind: 'timer', label: 'bread', created: past, due: past, duration_s: 60 }] };
    mkdirSync(vars.IRIS_STATE_DIR, { recursive: true });
    writeFileSync(join(vars.IRIS_STATE_DIR, 'timers.json'), JSON.stringify(state));
    const daemon = startIris(['daemon'], vars);
    const missed = waitForLine(daemon, /While I was off, your bread timer was due at/);
    await waitForLine(daemon, /ready:/);
    expect(await missed).toMatch(/missed #1/);

    // Another process adds a reminder: the daemon notices the file change and fires it.
    const fired = waitForLine(daemon, /Reminder: stand up\./);
    const set = await iris(['tools', 'call', 'set_reminder', '{"at":"in 1 second","text":"stand up"}'], vars);
    expect(set.code).toBe(0);
    expect(await fired).toMatch(/reminder #2/);

    writeFileSync(vars.IRIS_CONFIG, '[assistant]\ntimezone = 3\n');
    const kept = waitForLine(daemon, /keeping the running one/);
    daemon.kill('SIGHUP');
    expect(await kept).toMatch(/config not applied/);

    const stopped = waitForLine(daemon, /stopped/);
    daemon.kill('SIGTERM');
    await stopped;
    const code = await new Promise((resolve) => daemon.once('exit', resolve));
    expect(code).toBe(0);
    expect(JSON.parse(readFileSync(join(vars.IRIS_STATE_DIR, 'timers.json'), 'utf8'))).toMatchObject({ timers: [] });
  });

  it('pre-warms MCP servers at start and applies enabled = false on SIGHUP', async () => {
    const server = serversToml({ everything: stdio(EVERYTHING, 'stdio') });
    const { vars } = env(`[assistant]\ntimezone = "UTC"\n${server}`);
    const daemon = startIris(['daemon'], vars);
    const up = waitForLine(daemon, /everything: up over stdio, 15 tools/);
    await waitForLine(daemon, /ready:/);
    await up;
    writeFileSync(vars.IRIS_CONFIG, `[assistant]\ntimezone = "UTC"\n${server}enabled = false\n`);
    const disabled = waitForLine(daemon, /everything: disabled/);
    const reread = waitForLine(daemon, /config re-read/);
    daemon.kill('SIGHUP');
    await Promise.all([disabled, reread]);
    const stopped = new Promise((resolve) => daemon.once('exit', resolve));
    daemon.kill('SIGTERM');
    expect(await stopped).toBe(0);
  });

  it('answers iris status, ask and timers over its control socket', async () => {
    const { vars } = env('[assistant]\ntimezone = "UTC"\n');
    const notRunning = await iris(['status'], vars);
    expect(notRunning.code).toBe(1);
    expect(notRunning.stderr).toBe(`IRIS is not running (no daemon listens on ${vars.IRIS_SOCKET})\n`);
    const daemon = startIris(['daemon'], vars);
    await waitForLine(daemon, /ready:/);
    const armed = waitForLine(daemon, /Reminder: stretch\./);
    const set = await iris(['ask', 'remind me in 2 seconds to stretch'], vars);
    expect(set).toMatchObject({ code: 0, stdout: expect.stringMatching(/^OK, I'll remind you to stretch at /) });
    await armed; // the daemon armed it at once: the request went through the daemon
    expect((await iris(['ask', 'set a tea timer for 10 minutes'], vars)).stdout).toBe('Tea timer set for 10 minutes.\n');
    const status = JSON.parse((await iris(['status', '--json'], vars)).stdout) as Record<string, unknown>;
    expect(status).toMatchObject({ pid: daemon.pid, home_zone: 'UTC', timers: 1, mcp: [] });
    expect(await irisWithStdoutClosed(['status', '--json'], vars)).toEqual({ code: 0, stderr: '' });
    expect(JSON.parse((await iris(['timers', 'list', '--json'], vars)).stdout)).toEqual([expect.objectContaining({ label: 'tea' })]);
    const stopped = new Promise((resolve) => daemon.once('exit', resolve));
    daemon.kill('SIGTERM');
    expect(await stopped).toBe(0);
    expect((await iris(['status'], vars)).code).toBe(1);
  });

  it('keeps a conversation per client: one client\'s yes never answers another\'s question', async () => {
    const double = await new OllamaDouble().start();
    const files = tempDir();
    const target = join(files, 'alice.txt');
    const { vars } = env(`[assistant]\ntimezone = "UTC"\n[ollama]\nurl = "${double.url}"\n${serversToml({ files: stdio(FILESYSTEM, files) })}`);
    const daemon = startIris(['daemon'], vars);
    try {
      await waitForLine(daemon, /ready:/);
      double.script(
        { tool_calls: [{ name: 'execute_tool', arguments: { tool_path: 'files.write_file', arguments: { path: target, content: 'a' } } }] },
        { content: ['Yes to what?'] },
        { content: ['Saved.'] },
      );
      const asked = await iris(['ask', 'save a'], vars); // a new client: a new conversation, and how to answer it
      expect(asked.stdout).toMatch(/^Should I run write file from files/);
      const alice = /^To answer: iris ask --conversation ([0-9a-f-]{36}) yes$/m.exec(asked.stderr)?.[1];
      expect(alice).toBeDefined();
      const bob = JSON.parse((await iris(['ask', '--json', 'yes'], vars)).stdout) as { reply: string; conversation: string };
      expect(bob).toMatchObject({ reply: 'Yes to what?', conversation: expect.stringMatching(/^[0-9a-f-]{36}$/) });
      expect(bob.conversation).not.toBe(alice);
      expect(existsSync(target)).toBe(false);
      expect((await iris(['ask', '--conversation', alice ?? '', 'yes'], vars)).stdout).toBe('Saved.\n');
      expect(readFileSync(target, 'utf8')).toBe('a');
      expect(await iris(['ask', '--conversation', 'no spaces please', 'hi'], vars)).toMatchObject({ code: 1, stderr: expect.stringMatching(/"conversation" must be/) });
    } finally {
      const stopped = new Promise((resolve) => daemon.once('exit', resolve));
      daemon.kill('SIGTERM');
      await stopped;
      await double.close();
    }
  });

  it('answers iris status within 1 s while an MCP server\'s form of 30,000 choices arrives, and declines the form', async () => {
    const double = await new OllamaDouble().start();
    const { vars } = env(`[assistant]\ntimezone = "UTC"\n[ollama]\nurl = "${double.url}"\n${serversToml({ desk: { ...fake('elicit'), confirm: 'never' } })}`);
    const daemon = startIris(['daemon'], vars);
    try {
      await Promise.all([waitForLine(daemon, /ready:/), waitForLine(daemon, /desk: up/)]);
      // The first model turn loads the tokenizer (about a second of the thread on a busy machine): not measured.
      double.script({ content: ['Once upon a time.'] });
      await iris(['ask', 'tell me a story'], vars);
      double.script({ tool_calls: [{ name: 'execute_tool', arguments: { tool_path: 'desk.pick_anything', arguments: {} } }] }, { content: ['Nothing picked.'] });
      let done = false;
      const asked = iris(['ask', 'pick something'], vars).finally(() => (done = true));
      let slowestMs = 0;
      while (!done) {
        const started = performance.now();
        await request(vars.IRIS_SOCKET, { cmd: 'status' });
        slowestMs = Math.max(slowestMs, performance.now() - started);
      }
      expect((await asked).stdout).toMatch(/^The desk server sent a form too large to ask here \(30000 choices for "choice"; at most 500\), so I declined\./);
      expect(slowestMs).toBeLessThan(1000);
    } finally {
      const stopped = new Promise((resolve) => daemon.once('exit', resolve));
      daemon.kill('SIGTERM');
      await stopped;
      await double.close();
    }
  });

  it('keeps Home Assistant\'s conversations apart from iris ask clients\': no yes across, no eviction by transcripts', async () => {
    const port = await closedPort();
    const double = await new OllamaDouble().start();
    const files = tempDir();
    const target = join(files, 'alice.txt');
    const { vars } = env(`[assistant]\ntimezone = "UTC"\n[ollama]\nurl = "${double.url}"\n[wyoming]\nlisten = "tcp://127.0.0.1:${port}"\n${serversToml({ files: stdio(FILESYSTEM, files) })}`);
    /** One Wyoming transcript, as Home Assistant sends it; IRIS's answer. */
    const transcript = (text: string, conversationId: string) => new Promise<string>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1');
      const reader = new EventReader();
      socket.on('data', (chunk: Buffer) => {
        const handled = reader.push(chunk).find((e) => e.type === 'handled');
        if (handled !== undefined) {
          socket.destroy();
          resolve(String(handled.data.text));
        }
      });
      socket.on('error', reject);
      socket.write(encodeEvent('transcript', { text, context: { conversation_id: conversationId } }));
    });
    const daemon = startIris(['daemon'], vars);
    try {
      await waitForLine(daemon, /ready:/);
      for (const minutes of [10, 20]) await iris(['ask', `set a timer for ${minutes} minutes`], vars);
      const timers = async () => JSON.parse((await iris(['timers', 'list', '--json'], vars)).stdout) as unknown[];
      // Home Assistant is asked whether to cancel them all; a CLI client's yes for its conversation does nothing.
      expect(await transcript('cancel all timers', 'home')).toMatch(/Say yes or no/);
      expect(await iris(['ask', '--conversation', 'ha:home', 'yes'], vars)).toMatchObject({ code: 1, stderr: expect.stringMatching(/"ha:home" is Home Assistant's conversation/) });
      expect(await timers()).toHaveLength(2);
      // A CLI client's question outlives 70 transcripts from the LAN, each a conversation of its own.
      double.script({ tool_calls: [{ name: 'execute_tool', arguments: { tool_path: 'files.write_file', arguments: { path: target, content: 'a' } } }] }, { content: ['Saved.'] });
      const asked = await iris(['ask', 'save a'], vars);
      const alice = /--conversation (\S+) yes$/m.exec(asked.stderr)?.[1];
      expect(alice).toBeDefined();
      for (let i = 0; i < 70; i++) await transcript('what time is it', `peer-${i}`);
      expect((await iris(['ask', '--conversation', alice ?? '', 'yes'], vars)).stdout).toBe('Saved.\n');
      expect(readFileSync(target, 'utf8')).toBe('a');
    } finally {
      const stopped = new Promise((resolve) => daemon.once('exit', resolve));
      daemon.kill('SIGTERM');
      await stopped;
      await double.close();
    }
  }, 60_000);

  it('stays up through Ollama going away and coming back, and a config broken then fixed', async () => {
    const port = await closedPort();
    const config = `[assistant]\ntimezone = "UTC"\n[ollama]\nurl = "http://127.0.0.1:${port}"\n`;
    const { vars } = env(config);
    const daemon = startIris(['daemon'], vars);
    await waitForLine(daemon, /ready:/);
    const down = await iris(['ask', 'tell me a story'], vars);
    expect(down).toMatchObject({ code: 1, stdout: expect.stringMatching(/^I can't reach the language model/) });
    const double = await new OllamaDouble().start(port); // Ollama comes (back) up on the same port
    try {
      double.script({ content: ['Once upon a time.'] });
      expect(await iris(['ask', 'tell me a story'], vars)).toMatchObject({ code: 0, stdout: 'Once upon a time.\n' });
    } finally {
      await double.close();
    }
    writeFileSync(vars.IRIS_CONFIG, `${config}[tools]\ncalculator = "maybe"\n`);
    const refused = waitForLine(daemon, /keeping the running one/);
    daemon.kill('SIGHUP');
    await refused;
    // Without naming the (now broken) file, as a person's shell does: the daemon answers with its old config.
    const unnamed = { IRIS_STATE_DIR: vars.IRIS_STATE_DIR, IRIS_SOCKET: vars.IRIS_SOCKET, IRIS_CONFIG: '' };
    expect((await iris(['ask', 'what is 6 times 7'], unnamed)).stdout).toBe("That's 42.\n");
    const reload = await iris(['reload'], unnamed); // what `systemctl reload iris` runs
    expect(reload.code).toBe(78);
    expect(reload.stderr).toMatch(/"tools\.calculator" must be a boolean/);
    writeFileSync(vars.IRIS_CONFIG, `${config}[tools]\ncalculator = false\n`);
    expect((await iris(['reload'], vars)).code).toBe(0);
    const off = await iris(['tools', 'call', 'calculator', '{"expression":"6*7"}'], vars);
    expect(off.stdout).toMatch(/The tool "calculator" is switched off/);
    const stopped = new Promise((resolve) => daemon.once('exit', resolve));
    daemon.kill('SIGTERM');
    expect(await stopped).toBe(0);
  });

  it('loses no timer to kill -9, and rides out an MCP server killed again and again', async () => {
    const server = serversToml({ everything: stdio(EVERYTHING, 'stdio') });
    const { vars } = env(`[assistant]\ntimezone = "UTC"\n${server}`);
    const status = async () => JSON.parse((await iris(['status', '--json'], vars)).stdout) as { timers: number; mcp: { state: string; pid?: number }[] };
    let daemon = startIris(['daemon'], vars);
    await Promise.all([waitForLine(daemon, /ready:/), waitForLine(daemon, /everything: up/)]);
    for (const minutes of [10, 20, 30]) await iris(['ask', `set a timer for ${minutes} minutes`], vars);
    let pid = (await status()).mcp[0]?.pid;
    for (let round = 0; round < 3; round++) {
      const back = waitForLine(daemon, /everything: up over stdio/);
      process.kill(pid ?? 0, 'SIGKILL');
      await back;
      const now = await status();
      expect(now.mcp[0]?.state).toBe('up');
      expect(now.mcp[0]?.pid).not.toBe(pid);
      pid = now.mcp[0]?.pid;
    }
    const died = new Promise((resolve) => daemon.once('exit', (_code, signal) => resolve(signal)));
    daemon.kill('SIGKILL');
    expect(await died).toBe('SIGKILL');
    daemon = startIris(['daemon'], vars);
    await waitForLine(daemon, /ready:/);
    const timers = JSON.parse((await iris(['timers', 'list', '--json'], vars)).stdout) as { duration_s: number }[];
    expect(timers.map((t) => t.duration_s)).toEqual([600, 1200, 1800]);
    const stopped = new Promise((resolve) => daemon.once('exit', resolve));
    daemon.kill('SIGTERM');
    expect(await stopped).toBe(0);
  }, 60_000); // three daemon starts and an MCP server killed repeatedly; slow when the suite runs beside it

  it('refuses to start on a broken config with exit 78', async () => {
    const { vars } = env('[nonsense]\n');
    const run = await iris(['daemon'], vars);
    expect(run.code).toBe(78);
    expect(run.stderr).toMatch(/config:1: unknown section \[nonsense\]/);
  });
});

describe('the config, the same for every command', () => {
  /** A config whose `[mcp] servers_file` holds `json` (or names a file that is not there). */
  function withServersFile(json: string | undefined) {
    const dir = tempDir();
    const servers = join(dir, 'servers.json');
    if (json !== undefined) writeFileSync(servers, json);
    writeFileSync(join(dir, 'config'), `[assistant]\ntimezone = "UTC"\n[mcp]\nservers_file = "${servers}"\n`);
    return { servers, vars: { IRIS_CONFIG: join(dir, 'config'), IRIS_STATE_DIR: join(dir, 'state'), IRIS_SOCKET: join(dir, 'control.sock') } };
  }

  it('config check finds what tools list and doctor refuse in servers_file, in the same words, exit 78', async () => {
    const cases: [string, string | undefined, RegExp][] = [
      ['bad JSON', '{\n  "mcpServers": {\n    "x": { "command": "a", }\n', /^SERVERS:3: not valid JSON: /],
      ['the wrong shape', '{ "servers": {} }', /^SERVERS:1: expected \{"mcpServers": /],
      ['a missing file', undefined, /^CONFIG:4: "mcp.servers_file": no such file: SERVERS\n$/],
      ['wrong types', '{ "mcpServers": {\n  "x": { "command": ["a"] }\n} }', /^SERVERS:2: "mcpServers.x.command" must be a string, not an array/],
    ];
    for (const [what, json, expected] of cases) {
      const { servers, vars } = withServersFile(json);
      const runs = await Promise.all([['config', 'check'], ['tools', 'list'], ['doctor'], ['ask', 'what time is it']].map((args) => iris(args, vars)));
      const pattern = new RegExp(expected.source.replace('SERVERS', servers).replace('CONFIG', vars.IRIS_CONFIG));
      for (const run of runs) {
        expect({ what, code: run.code, stderr: run.stderr }).toEqual({ what, code: 78, stderr: expect.stringMatching(pattern) });
        expect(run.stderr).toBe(runs[0]?.stderr);
      }
    }
    const { vars } = withServersFile(JSON.stringify({ mcpServers: { fs: { command: process.execPath, args: [FILESYSTEM, tempDir()] } } }));
    expect(await iris(['config', 'check'], vars)).toMatchObject({ code: 0, stdout: expect.stringMatching(/: OK \(MCP servers also from .*servers\.json\)\n$/) });
  });

  it('a config named by --config or IRIS_CONFIG must exist, for every command; the default may be absent', async () => {
    const { dir, vars } = env();
    const missing = join(dir, 'missing');
    const commands = [
      ['config', 'check'], ['ask', 'what time is it'], ['chat'], ['tools', 'list'], ['tools', 'budget'], ['tools', 'call', 'get_current_time'],
      ['timers', 'list'], ['timers', 'cancel', 'all'], ['status'], ['reload'], ['doctor'], ['say', 'hi', '--out', join(dir, 'x.wav')],
      ['listen', '--file', join(dir, 'x.wav')], ['models', 'fetch', 'tiny.en', '--out', join(dir, 'm.bin')], ['daemon'],
    ];
    const flagged = await Promise.all(commands.map((args) => iris([...args, '--config', missing], vars)));
    for (const [i, run] of flagged.entries()) {
      // One line; the daemon's is a log line ("error iris: …").
      expect({ command: commands[i], code: run.code, stderr: run.stderr.replace(/^error iris: /, '') }).toEqual({
        command: commands[i], code: 78, stderr: `${missing}: no such config file (named by --config)\n`,
      });
    }
    const fromEnv = await iris(['tools', 'list'], { ...vars, IRIS_CONFIG: missing });
    expect(fromEnv).toMatchObject({ code: 78, stderr: `${missing}: no such config file (named by $IRIS_CONFIG)\n` });
    expect(existsSync(join(dir, 'm.bin'))).toBe(false);
  });

  it.skipIf(existsSync('/etc/iris/config'))('without --config or IRIS_CONFIG an absent /etc/iris/config means every default, and says so', async () => {
    const { vars } = env();
    const unnamed = { IRIS_STATE_DIR: vars.IRIS_STATE_DIR, IRIS_SOCKET: vars.IRIS_SOCKET, IRIS_CONFIG: '' };
    const [check, doctor] = await Promise.all([iris(['config', 'check'], unnamed), iris(['doctor'], unnamed)]);
    expect(check).toMatchObject({ code: 0, stdout: '/etc/iris/config: not found, using defaults\n' });
    expect(doctor.stdout).toMatch(/^✓ config: \/etc\/iris\/config not found, using defaults$/m);
    expect(doctor.stdout).not.toMatch(/is valid/);
  });

  it('a command the daemon answers says whose config answered, and still refuses a broken --config', async () => {
    const { dir, vars } = env('[assistant]\ntimezone = "UTC"\n');
    const other = join(dir, 'other');
    writeFileSync(other, '[assistant]\ntimezone = "Asia/Tokyo"\n');
    const garbage = join(dir, 'garbage');
    writeFileSync(garbage, '[assistant]\ntimezone = 3\n');
    const daemon = startIris(['daemon'], vars);
    try {
      await waitForLine(daemon, /ready:/);
      const note = `answered by the running daemon with its config ${vars.IRIS_CONFIG}; --config ${other} is not used\n`;
      const [ask, status, timers, own] = await Promise.all([
        iris(['ask', '--config', other, 'what time is it'], vars),
        iris(['status', '--json', '--config', other], vars),
        iris(['timers', 'list', '--config', other], vars),
        iris(['ask', '--config', vars.IRIS_CONFIG, 'what time is it'], vars),
      ]);
      expect(ask).toMatchObject({ code: 0, stderr: note, stdout: expect.stringMatching(/^It's /) });
      expect(status).toMatchObject({ code: 0, stderr: note });
      expect(JSON.parse(status.stdout)).toMatchObject({ config: vars.IRIS_CONFIG, home_zone: 'UTC' });
      expect(timers).toMatchObject({ code: 0, stderr: note });
      expect(own).toMatchObject({ code: 0, stderr: '' });
      const broken = await Promise.all([['ask', 'what time is it'], ['status'], ['timers', 'list'], ['reload']].map((args) => iris([...args, '--config', garbage], vars)));
      for (const run of broken) {
        expect(run).toMatchObject({ code: 78, stdout: '', stderr: `${garbage}:2: "assistant.timezone" must be a string, not a number (3)\n` });
      }
    } finally {
      const stopped = new Promise((resolve) => daemon.once('exit', resolve));
      daemon.kill('SIGTERM');
      await stopped;
    }
  });
});
