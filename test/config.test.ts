import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig, loadMcpServers, parseConfig } from '../src/config/load.js';
import { renderDefaultConfig } from '../src/config/defaults.js';
import { ConfigError } from '../src/errors.js';
import { tempDir } from './helpers/tmp.js';

function problems(text: string, env: NodeJS.ProcessEnv = {}): string[] {
  try {
    parseConfig(text, '/etc/iris/config', env);
  } catch (error) {
    if (error instanceof ConfigError) return [...error.problems];
    throw error;
  }
  return [];
}

describe('config', () => {
  it('gives every default for an empty file, frozen', () => {
    const config = parseConfig('', 'c');
    expect(config.ollama.url).toBe('http://127.0.0.1:11434');
    expect(config.ollama.model).toBe('qwen2.5:7b');
    expect(config.budget).toEqual({ context_tokens: 8192, tool_tokens: 1500, reply_tokens: 512, tool_result_chars: 4000 });
    expect(config.tools.timers).toBe(true);
    expect(config.assistant.timezone).toBe(Intl.DateTimeFormat().resolvedOptions().timeZone);
    expect(Object.isFrozen(config.ollama)).toBe(true);
  });

  it('fills defaults for the keys a partial file leaves out', () => {
    const config = parseConfig('[ollama]\nmodel = "llama3.1:8b"\n[tools]\ncalculator = false\n', 'c');
    expect(config.ollama.model).toBe('llama3.1:8b');
    expect(config.ollama.timeout_s).toBe(60);
    expect(config.tools).toMatchObject({ calculator: false, time: true, timers: true });
  });

  it('reports every problem with its line', () => {
    const text = [
      '[assistant]', // 1
      'timezone = "Mars/Olympus"', // 2
      'wakeword = "x"', // 3
      '[ollama]', // 4
      'url = "ftp://host"', // 5
      'timeout_s = "60"', // 6
      '[stt]', // 7
      'engine = "vosk"', // 8
      '[weather]', // 9
      'city = "Berlin"', // 10
    ].join('\n');
    expect(problems(text)).toEqual([
      '/etc/iris/config:2: "assistant.timezone" = "Mars/Olympus" is not an IANA time zone (e.g. "Europe/Berlin", "America/New_York")',
      '/etc/iris/config:3: unknown key "wakeword" in [assistant] (known: wake_word, wake_threshold, timezone, follow_up_s, forget_after_s, confirm_timeout_s)',
      '/etc/iris/config:5: "ollama.url" = "ftp://host" is not an http:// or https:// URL',
      '/etc/iris/config:6: "ollama.timeout_s" must be a number, not a string ("60")',
      '/etc/iris/config:8: "stt.engine" must be one of "whisper", "pocketsphinx", not "vosk"',
      expect.stringMatching(/^\/etc\/iris\/config:9: unknown section \[weather\]/),
    ]);
  });

  it('reports a TOML syntax error with its line', () => {
    expect(problems('[tools]\ntime = true\ncalculator = yes\n')).toEqual([expect.stringMatching(/^\/etc\/iris\/config:3: /)]);
  });

  it('checks MCP servers: one of command or url, URL form, nested keys', () => {
    const text = '[mcp.servers.a]\nargs = ["x"]\n\n[mcp.servers.b]\nurl = "not a url"\n\n[mcp.servers.c]\ncommand = "x"\nenabeld = true\n';
    expect(problems(text)).toEqual([
      '/etc/iris/config:1: [mcp.servers.a] needs exactly one of "command" (stdio) or "url" (HTTP)',
      '/etc/iris/config:5: "mcp.servers.b.url" = "not a url" is not an http:// or https:// URL',
      expect.stringMatching(/^\/etc\/iris\/config:9: unknown key "enabeld" in \[mcp.servers.c\]/),
    ]);
  });

  it('substitutes ${VAR} from the environment, with fallbacks, and reports unset ones', () => {
    const text = '[mcp.servers.home]\nurl = "http://${HA_HOST:-127.0.0.1}:8123/mcp"\nheaders = { Authorization = "Bearer ${HOME_TOKEN}" }\n';
    const config = parseConfig(text, 'c', { HOME_TOKEN: 's3cret' });
    expect(config.mcp.servers.home?.url).toBe('http://127.0.0.1:8123/mcp');
    expect(config.mcp.servers.home?.headers).toEqual({ Authorization: 'Bearer s3cret' });
    expect(problems(text)).toEqual(['/etc/iris/config:3: environment variable HOME_TOKEN is not set (used as ${HOME_TOKEN})']);
  });

  it('reads MCP servers from servers_file in the common {"mcpServers"} shape; the config file wins', async () => {
    const dir = tempDir();
    const file = join(dir, 'servers.json');
    writeFileSync(file, JSON.stringify({ mcpServers: {
      files: { command: 'npx', args: ['-y', '@modelcontextprotocol/server-filesystem', '/srv'], env: { TOKEN: '${SECRET}' } },
      home: { type: 'sse', url: 'http://127.0.0.1:8123/sse', headers: { Authorization: 'Bearer x' } },
      old: { command: 'old-server', disabled: true },
      dup: { command: 'from-file' },
    } }));
    const config = parseConfig(`[mcp]\nservers_file = "${file}"\n[mcp.servers.dup]\ncommand = "from-config"\n`, 'c');
    const servers = await loadMcpServers(config, { SECRET: 's3' });
    expect(servers.files).toMatchObject({ command: 'npx', env: { TOKEN: 's3' }, enabled: true });
    expect(servers.home).toMatchObject({ url: 'http://127.0.0.1:8123/sse', transport: 'sse', headers: { Authorization: 'Bearer x' } });
    expect(servers.old?.enabled).toBe(false);
    expect(servers.dup?.command).toBe('from-config');

    writeFileSync(file, JSON.stringify({ mcpServers: { bad: { args: ['x'] }, worse: { command: 3 } } }));
    await expect(loadMcpServers(config, {})).rejects.toThrow(/bad: needs exactly one of "command" or "url"[\s\S]*worse: \/command must be string/);
    writeFileSync(file, '{ nope');
    await expect(loadMcpServers(config, {})).rejects.toThrow(new RegExp(`^${file}: `));
  });

  it('ships a default file that is valid as it is and with every key uncommented', () => {
    const text = renderDefaultConfig();
    const defaults = parseConfig('', 'c');
    expect(parseConfig(text, 'c')).toEqual(defaults);
    const uncommented = text.replace(/^#([a-z_]+ = )/gm, '$1');
    expect(uncommented).toMatch(/^context_tokens = 8192$/m);
    expect(parseConfig(uncommented, 'c')).toEqual(defaults);
  });

  it('treats a missing file as all defaults, and reads a real one', async () => {
    const dir = tempDir();
    expect((await loadConfig(join(dir, 'none'))).tools.time).toBe(true);
    writeFileSync(join(dir, 'config'), '[assistant]\ntimezone = "Asia/Tokyo"\n');
    expect((await loadConfig(join(dir, 'config'))).assistant.timezone).toBe('Asia/Tokyo');
  });
});
