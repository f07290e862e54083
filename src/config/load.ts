/**
 * One pure loader: TOML text in, a frozen `Config` out, or a `ConfigError` that lists every
 * problem as `FILE:LINE: message`. `loadConfig` only adds reading the file.
 */
import { readFile } from 'node:fs/promises';
import { Ajv, type ErrorObject } from 'ajv';
import { IANAZone } from 'luxon';
import { getStaticTOMLValue, parseTOML } from 'toml-eslint-parser';
import type { AST } from 'toml-eslint-parser';
import { ConfigError } from '../errors.js';
import { configSchema, type Config, type McpServerConfig } from './schema.js';

export const DEFAULT_CONFIG_PATH = '/etc/iris/config';

const ajv = new Ajv({ allErrors: true, useDefaults: true, strict: true, allowUnionTypes: true });
ajv.addFormat('iana-zone', (zone: string) => zone === '' || IANAZone.isValidZone(zone));
ajv.addFormat('http-url', (url: string) => {
  try {
    const { protocol } = new URL(url);
    return protocol === 'http:' || protocol === 'https:';
  } catch {
    return false;
  }
});
const validate = ajv.compile(configSchema);
const validateServer = ajv.compile(configSchema.properties.mcp.properties.servers.additionalProperties);

/** The system's IANA zone, as Node sees it (TZ, /etc/localtime). */
export function systemTimeZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone;
}

/** Read and validate a config file; a missing file means every default. */
export async function loadConfig(path: string, env: NodeJS.ProcessEnv = process.env): Promise<Config> {
  let text = '';
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') {
      throw new ConfigError([`${path}: cannot read: ${(error as Error).message}`]);
    }
  }
  return parseConfig(text, path, env);
}

/** Parse TOML text into a validated, defaulted, frozen config. Pure. */
export function parseConfig(text: string, file: string, env: NodeJS.ProcessEnv = {}): Config {
  let ast: AST.TOMLProgram;
  try {
    ast = parseTOML(text);
  } catch (error) {
    const { lineNumber, message } = error as { lineNumber?: number; message: string };
    throw new ConfigError([`${file}:${lineNumber ?? 1}: ${message}`]);
  }
  const lines = keyLines(ast);
  const lineOf = (pointer: string): number => {
    for (let p = pointer; ; p = p.slice(0, p.lastIndexOf('/'))) {
      const line = lines.get(p);
      if (line !== undefined || p === '') return line ?? 1;
    }
  };
  const problems: { line: number; message: string }[] = [];
  const data = substituteEnv(getStaticTOMLValue(ast), '', env, (pointer, message) =>
    problems.push({ line: lineOf(pointer), message }),
  );
  if (!validate(data)) {
    for (const error of validate.errors ?? []) {
      const pointer = error.keyword === 'additionalProperties'
        ? `${error.instancePath}/${String(error.params.additionalProperty)}`
        : error.instancePath;
      problems.push({ line: lineOf(pointer), message: describe(error, data) });
    }
  }
  const config = data as Config & { assistant: { timezone: string } };
  for (const [name, server] of Object.entries(config.mcp?.servers ?? {})) {
    if ((server.command === undefined) === (server.url === undefined)) {
      problems.push({
        line: lineOf(`/mcp/servers/${name}`),
        message: `[mcp.servers.${name}] needs exactly one of "command" (stdio) or "url" (HTTP)`,
      });
    }
  }
  if (problems.length > 0) {
    problems.sort((a, b) => a.line - b.line);
    throw new ConfigError(problems.map((p) => `${file}:${p.line}: ${p.message}`));
  }
  if (config.assistant.timezone === '') config.assistant.timezone = systemTimeZone();
  return deepFreeze(config);
}

/**
 * MCP servers from `[mcp] servers_file`, a JSON file in the common `{"mcpServers": {...}}`
 * shape (Claude Desktop, ollmcp): stdio `{command, args, env, cwd, disabled}` or HTTP
 * `{url, type, headers}`. Servers in the config file win over ones with the same name here.
 */
export async function loadMcpServers(config: Config, env: NodeJS.ProcessEnv = process.env): Promise<Record<string, McpServerConfig>> {
  const file = config.mcp.servers_file;
  if (file === '') return { ...config.mcp.servers };
  let parsed: unknown;
  try {
    parsed = JSON.parse(await readFile(file, 'utf8'));
  } catch (error) {
    throw new ConfigError([`${file}: ${(error as Error).message}`]);
  }
  const servers = (parsed as { mcpServers?: unknown }).mcpServers;
  if (servers === null || typeof servers !== 'object' || Array.isArray(servers)) {
    throw new ConfigError([`${file}: expected {"mcpServers": {"name": {...}}}`]);
  }
  const problems: string[] = [];
  const out: Record<string, McpServerConfig> = {};
  for (const [name, raw] of Object.entries(servers as Record<string, Record<string, unknown>>)) {
    const { disabled, type, ...rest } = raw ?? {};
    const candidate: Record<string, unknown> = { ...rest, enabled: disabled !== true };
    if (typeof type === 'string' && rest.url !== undefined) candidate.transport = /sse/i.test(type) ? 'sse' : 'streamable-http';
    const substituted = substituteEnv(candidate, '', env, (_p, message) => problems.push(`${file}: ${name}: ${message}`));
    if (!validateServer(substituted)) {
      for (const error of validateServer.errors ?? []) problems.push(`${file}: ${name}: ${error.instancePath || 'server'} ${error.message ?? 'is invalid'}`);
    } else if (((substituted as McpServerConfig).command === undefined) === ((substituted as McpServerConfig).url === undefined)) {
      problems.push(`${file}: ${name}: needs exactly one of "command" or "url"`);
    } else out[name] = substituted as McpServerConfig;
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return { ...out, ...config.mcp.servers };
}

/** Every key's line, by JSON pointer (`/ollama/url`), tables included. */
function keyLines(ast: AST.TOMLProgram): Map<string, number> {
  const lines = new Map<string, number>();
  const pointer = (path: readonly (string | number)[]): string =>
    path.map((k) => `/${String(k).replace(/~/g, '~0').replace(/\//g, '~1')}`).join('');
  const visitValue = (path: (string | number)[], node: AST.TOMLContentNode): void => {
    if (node.type === 'TOMLInlineTable') node.body.forEach((kv) => visitKeyValue(path, kv));
    if (node.type === 'TOMLArray') {
      node.elements.forEach((element, i) => {
        lines.set(pointer([...path, i]), element.loc.start.line);
        visitValue([...path, i], element);
      });
    }
  };
  const visitKeyValue = (prefix: (string | number)[], kv: AST.TOMLKeyValue): void => {
    const path = [...prefix, ...kv.key.keys.map((k) => (k.type === 'TOMLBare' ? k.name : k.value))];
    for (let i = prefix.length + 1; i <= path.length; i++) {
      if (!lines.has(pointer(path.slice(0, i)))) lines.set(pointer(path.slice(0, i)), kv.loc.start.line);
    }
    visitValue(path, kv.value);
  };
  for (const item of ast.body[0].body) {
    if (item.type === 'TOMLKeyValue') {
      visitKeyValue([], item);
      continue;
    }
    for (let i = 1; i <= item.resolvedKey.length; i++) {
      const p = pointer(item.resolvedKey.slice(0, i));
      if (!lines.has(p)) lines.set(p, item.loc.start.line);
    }
    item.body.forEach((kv) => visitKeyValue(item.resolvedKey, kv));
  }
  return lines;
}

/** Replace `${VAR}` (and `${VAR:-fallback}`) in every string; an unset VAR is a problem. */
function substituteEnv(
  value: unknown,
  pointer: string,
  env: NodeJS.ProcessEnv,
  problem: (pointer: string, message: string) => void,
): unknown {
  if (typeof value === 'string') {
    return value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g, (_m, name: string, fallback?: string) => {
      const found = env[name] ?? fallback;
      if (found === undefined) problem(pointer, `environment variable ${name} is not set (used as \${${name}})`);
      return found ?? '';
    });
  }
  if (Array.isArray(value)) return value.map((v, i) => substituteEnv(v, `${pointer}/${i}`, env, problem));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [k, substituteEnv(v, `${pointer}/${k}`, env, problem)]),
    );
  }
  return value;
}

/** One ajv error in the words of the config file. */
function describe(error: ErrorObject, data: unknown): string {
  const path = error.instancePath.split('/').slice(1).map((k) => k.replace(/~1/g, '/').replace(/~0/g, '~'));
  const key = path.join('.');
  const value = path.reduce<unknown>((v, k) => (v as Record<string, unknown> | undefined)?.[k], data);
  const shown = JSON.stringify(value);
  switch (error.keyword) {
    case 'additionalProperties': {
      const extra = String(error.params.additionalProperty);
      const known = Object.keys(schemaAt(path)).join(', ');
      return path.length === 0
        ? `unknown section [${extra}] (known: ${known})`
        : `unknown key "${extra}" in [${key}] (known: ${known})`;
    }
    case 'type':
      return `"${key}" must be ${article(String(error.params.type))}, not ${describeType(value)} (${shown})`;
    case 'enum':
      return `"${key}" must be one of ${(error.params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}, not ${shown}`;
    case 'format':
      return error.params.format === 'iana-zone'
        ? `"${key}" = ${shown} is not an IANA time zone (e.g. "Europe/Berlin", "America/New_York")`
        : `"${key}" = ${shown} is not an http:// or https:// URL`;
    default:
      return `"${key}" ${error.message ?? 'is invalid'} (${shown})`;
  }
}

function schemaAt(path: readonly string[]): Record<string, unknown> {
  let node: { properties?: Record<string, unknown>; additionalProperties?: unknown } = configSchema;
  for (const key of path) {
    const next = node.properties?.[key] ?? node.additionalProperties;
    if (typeof next !== 'object' || next === null) return {};
    node = next;
  }
  return node.properties ?? {};
}

function describeType(value: unknown): string {
  if (Array.isArray(value)) return 'an array';
  if (value === null) return 'null';
  if (value instanceof Date) return 'a date';
  return article(typeof value === 'object' ? 'table' : typeof value);
}

function article(type: string): string {
  const word = type === 'object' ? 'table' : type;
  return /^[aeiou]/.test(word) ? `an ${word}` : `a ${word}`;
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}
