import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { configFile, loadConfig, parseConfig } from '../src/config/load.js';
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
      '/etc/iris/config:3: unknown key "wakeword" in [assistant] (known: wake_word, wake_threshold, wake_check_from, timezone, follow_up_s, forget_after_s, confirm_timeout_s)',
      '/etc/iris/config:5: "ollama.url" = "ftp://host" is not an http:// or https:// URL',
      '/etc/iris/config:6: "ollama.timeout_s" must be a number, not a string ("60")',
      '/etc/iris/config:8: "stt.engine" must be one of "whisper", "pocketsphinx", not "vosk"',
      expect.stringMatching(/^\/etc\/iris\/config:9: unknown section \[weather\]/),
    ]);
  });

  it('refuses every *_s key past its maximum, with the line and the reason; takes the maximum itself', () => {
    const keys: [section: string, key: string, max: number][] = [
      ['assistant', 'follow_up_s', 60],
      ['assistant', 'forget_after_s', 86_400],
      ['assistant', 'confirm_timeout_s', 3600],
      ['ollama', 'timeout_s', 3600],
      ['tools', 'timeout_s', 600],
      ['audio', 'silence_s', 5],
      ['audio', 'complete_pause_s', 5],
      ['audio', 'incomplete_pause_s', 5],
      ['audio', 'take_back_s', 5],
      ['audio', 'max_command_s', 60],
      ['audio', 'no_speech_s', 60],
      ['audio', 'announce_every_s', 600],
      ['audio', 'speaker_idle_s', 3600],
      ['mcp', 'connect_timeout_s', 600],
      ['mcp', 'health_interval_s', 86_400],
      ['mcp', 'idle_stop_s', 86_400],
      ['mcp.servers.files', 'timeout_s', 3600],
    ];
    const server = (section: string) => (section === 'mcp.servers.files' ? 'command = "true"\n' : '');
    for (const [section, key, max] of keys) {
      const over = problems(`[${section}]\n${server(section)}${key} = 3000000\n`);
      expect(over, `${section}.${key}`).toEqual([expect.stringMatching(new RegExp(`^/etc/iris/config:${server(section) === '' ? 2 : 3}: "${section}\\.${key}" = 3000000 is more than ${max}`))]);
      expect(problems(`[${section}]\n${server(section)}${key} = ${max}\n`), `${section}.${key}`).toEqual([]);
    }
    expect(problems('[tools]\ntimeout_s = 3000000\n')).toEqual(['/etc/iris/config:2: "tools.timeout_s" = 3000000 is more than 600: the native tools answer within milliseconds']);
    // Every *_s key in the schema is in the list above: a new one needs a maximum too.
    const secondsKeys = [...renderDefaultConfig().matchAll(/^#(\w+_s) = /gm)].map((m) => m[1]);
    expect(secondsKeys.sort()).toEqual(keys.filter(([section]) => !section.startsWith('mcp.servers')).map(([, key]) => key).sort());
  });

  it('reports a TOML syntax error with its line', () => {
    expect(problems('[tools]\ntime = true\ncalculator = yes\n')).toEqual([expect.stringMatching(/^\/etc\/iris\/config:3: /)]);
  });

  it('points an unclosed table header at its own line and says what is missing', () => {
    expect(problems('# mine\n[assistant\ntimezone = "UTC"\n\n[ollama]\nmodel = "x"\n')).toEqual([
      '/etc/iris/config:2: the table header "[assistant" is not closed: end it with "]" ([assistant])',
    ]);
    expect(problems('[tools]\ntime = true\n[[mcp.servers # a "]" in a comment does not close it\n')).toEqual([
      expect.stringMatching(/^\/etc\/iris\/config:3: the table header "\[\[mcp\.servers .*" is not closed: end it with "\]\]"/),
    ]);
    // A bracket inside a string is not a header.
    expect(problems('[assistant]\nwake_word = "[x" # [y\n[tools]\ncalculator = yes\n')).toEqual([expect.stringMatching(/^\/etc\/iris\/config:4: (?!the table header)/)]);
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

  it('reads MCP servers from servers_file in the common {"mcpServers"} shape, relative to the config; the config file wins', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'servers.json'), JSON.stringify({ mcpServers: {
      files: { command: 'npx', args: ['-y', '@modelcontextprotocol/server-filesystem', '/srv'], env: { TOKEN: '${SECRET}' } },
      home: { type: 'sse', url: 'http://127.0.0.1:8123/sse', headers: { Authorization: 'Bearer x' } },
      old: { command: 'old-server', disabled: true },
      dup: { command: 'from-file' },
    } }));
    writeFileSync(join(dir, 'config'), '[mcp]\nservers_file = "servers.json"\n[mcp.servers.dup]\ncommand = "from-config"\n');
    const config = await loadConfig({ path: join(dir, 'config') }, { SECRET: 's3' });
    const servers = config.mcp.servers;
    expect(servers.files).toMatchObject({ command: 'npx', env: { TOKEN: 's3' }, enabled: true });
    expect(servers.home).toMatchObject({ url: 'http://127.0.0.1:8123/sse', transport: 'sse', headers: { Authorization: 'Bearer x' } });
    expect(servers.old?.enabled).toBe(false);
    expect(servers.dup?.command).toBe('from-config');
    expect(config.mcp.servers_file).toBe(join(dir, 'servers.json'));
  });

  it('reports every problem of servers_file as FILE:LINE, with the config file\'s own', async () => {
    const dir = tempDir();
    const config = join(dir, 'config');
    const servers = join(dir, 'servers.json');
    const check = async (json: string | undefined, toml = ''): Promise<string[]> => {
      if (json !== undefined) writeFileSync(servers, json);
      writeFileSync(config, `${toml}[mcp]\nservers_file = "${servers}"\n`);
      try {
        await loadConfig({ path: config }, {});
      } catch (error) {
        if (error instanceof ConfigError) return [...error.problems];
        throw error;
      }
      return [];
    };
    expect(await check('{\n  "mcpServers": {\n    "a": { "command": "x", }\n  }\n}\n')).toEqual([
      expect.stringMatching(new RegExp(`^${servers}:3: not valid JSON: `)),
    ]);
    expect(await check('{\n  "mcpServers": {\n')).toEqual([expect.stringMatching(new RegExp(`^${servers}:2: not valid JSON: `))]);
    expect(await check('{\n  "servers": {}\n}\n')).toEqual([`${servers}:1: expected {"mcpServers": {"NAME": {...}, ...}}`]);
    expect(await check('{\n  "mcpServers": []\n}\n')).toEqual([`${servers}:2: expected {"mcpServers": {"NAME": {...}, ...}}`]);
    const wrong = [
      '{ "mcpServers": {', // 1
      '  "bad": { "args": ["x"] },', // 2
      '  "worse": {', // 3
      '    "command": 3,', // 4
      '    "args": "--stdio",', // 5
      '    "disabled": "yes",', // 6
      '    "env": { "TOKEN": "${NOPE}" }', // 7
      '  },', // 8
      '  "http": { "url": "ftp://x", "headrs": {} },', // 9
      '  "on": { "command": "x", "enabled": "yes" }', // 10
      '} }',
    ].join('\n');
    expect(await check(wrong)).toEqual([
      `${servers}:2: "mcpServers.bad" needs exactly one of "command" (stdio) or "url" (HTTP)`,
      `${servers}:4: "mcpServers.worse.command" must be a string, not a number (3)`,
      `${servers}:5: "mcpServers.worse.args" must be an array, not a string ("--stdio")`,
      `${servers}:6: "mcpServers.worse.disabled" must be a boolean, not a string ("yes")`,
      `${servers}:7: environment variable NOPE is not set (used as \${NOPE})`,
      expect.stringMatching(new RegExp(`^${servers}:9: unknown key "headrs" in "mcpServers.http" \\(known: command, args, `)),
      `${servers}:9: "mcpServers.http.url" = "ftp://x" is not an http:// or https:// URL`,
      `${servers}:10: "mcpServers.on.enabled" must be a boolean, not a string ("yes")`,
    ]);
    rmSync(servers);
    expect(await check(undefined, '[tools]\ntime = "yes"\n')).toEqual([
      `${config}:2: "tools.time" must be a boolean, not a string ("yes")`,
      `${config}:4: "mcp.servers_file": no such file: ${servers}`,
    ]);
  });

  it('ships a default file that is valid as it is and with every key uncommented', () => {
    const text = renderDefaultConfig();
    const defaults = parseConfig('', 'c');
    expect(parseConfig(text, 'c')).toEqual(defaults);
    const uncommented = text.replace(/^#([a-z_]+ = )/gm, '$1');
    expect(uncommented).toMatch(/^context_tokens = 8192$/m);
    expect(parseConfig(uncommented, 'c')).toEqual(defaults);
  });

  it('treats a missing default file as all defaults, a missing named one as an error, and reads a real one', async () => {
    const dir = tempDir();
    const none = join(dir, 'none');
    expect(configFile(undefined, {})).toEqual({ path: '/etc/iris/config' });
    expect(configFile(undefined, { IRIS_CONFIG: none })).toEqual({ path: none, namedBy: 'IRIS_CONFIG' });
    expect(configFile(none, { IRIS_CONFIG: 'x' })).toEqual({ path: none, namedBy: '--config' });
    expect((await loadConfig({ path: none })).tools.time).toBe(true);
    await expect(loadConfig({ path: none, namedBy: '--config' })).rejects.toThrow(`${none}: no such config file (named by --config)`);
    await expect(loadConfig({ path: none, namedBy: 'IRIS_CONFIG' })).rejects.toThrow(`${none}: no such config file (named by $IRIS_CONFIG)`);
    writeFileSync(join(dir, 'config'), '[assistant]\ntimezone = "Asia/Tokyo"\n');
    expect((await loadConfig({ path: join(dir, 'config'), namedBy: '--config' })).assistant.timezone).toBe('Asia/Tokyo');
  });
});
