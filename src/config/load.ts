/**
 * The one config loader, run by every command that reads a config, `iris config check`
 * included: TOML text in, a frozen `Config` out, or a `ConfigError` that lists every problem
 * as `FILE:LINE: message` — in the config file and in the `[mcp] servers_file` it names.
 * `parseConfig` is the pure TOML half; `loadConfig` adds reading the files.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { Ajv, type ErrorObject } from 'ajv';
import { IANAZone } from 'luxon';
import { getStaticTOMLValue, parseTOML } from 'toml-eslint-parser';
import type { AST } from 'toml-eslint-parser';
import { ConfigError, messageOf } from '../errors.js';
import { isObject } from '../object.js';
import { stateDir } from '../toolhost/store.js';
import { configSchema, mcpServerSchema, type Config, type McpServerConfig } from './schema.js';

/** The name of `[stt] model`'s default file, wherever the state dir is. */
const DEFAULT_MODEL_FILE = path.basename(configSchema.properties.stt.properties.model.default);

export const DEFAULT_CONFIG_PATH = '/etc/iris/config';

/** The config file a command reads, and who named it. */
export interface ConfigFile {
  path: string;
  /** How the path was given; absent for the default path. A named file must exist. */
  namedBy?: '--config' | 'IRIS_CONFIG';
}

/** `--config`, else `$IRIS_CONFIG`, else the default path. */
export function configFile(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): ConfigFile {
  if (flag !== undefined) return { path: flag, namedBy: '--config' };
  if (env.IRIS_CONFIG) return { path: env.IRIS_CONFIG, namedBy: 'IRIS_CONFIG' };
  return { path: DEFAULT_CONFIG_PATH };
}

const ajv = new Ajv({ allErrors: true, useDefaults: true, strict: true, allowUnionTypes: true });
/** Why a key's `maximum` is what it is: said with the problem (schema.ts). */
ajv.addKeyword({ keyword: 'maximumReason', schemaType: 'string' });
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
const validateServer = ajv.compile<McpServerConfig>(mcpServerSchema);

/** The system's IANA zone, as Node sees it (TZ, /etc/localtime). */
export function systemTimeZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone;
}

/** A problem at a line of the file being checked. */
interface Problem {
  line: number;
  message: string;
}

/** Problems as `FILE:LINE: message`, in line order. */
function located(file: string, problems: readonly Problem[]): string[] {
  return [...problems].sort((a, b) => a.line - b.line).map((p) => `${file}:${p.line}: ${p.message}`);
}

/**
 * Read and check a config file and the `[mcp] servers_file` it names; every problem of both
 * is reported at once. A named file (`--config`, `$IRIS_CONFIG`) must exist; the default one
 * missing means every default. The servers file's servers join `mcp.servers` (the config
 * file's own win a name clash); a relative `servers_file` is relative to the config file.
 */
export async function loadConfig(file: ConfigFile, env: NodeJS.ProcessEnv = process.env): Promise<Config> {
  const toml = checkToml(await readConfigText(file), env);
  const problems = located(file.path, toml.problems);
  const config = toml.data as MutableConfig | undefined;
  const serversFile = typeof config?.mcp?.servers_file === 'string' ? config.mcp.servers_file : '';
  let fromFile: Record<string, McpServerConfig> = {};
  if (serversFile !== '') {
    const where = path.resolve(path.dirname(file.path), serversFile);
    const at = `${file.path}:${toml.lineOf('/mcp/servers_file')}: "mcp.servers_file"`;
    let text: string | undefined;
    try {
      text = await readFile(where, 'utf8');
    } catch (error) {
      const missing = (error as NodeJS.ErrnoException).code === 'ENOENT';
      problems.push(missing ? `${at}: no such file: ${where}` : `${at}: cannot read ${where}: ${messageOf(error)}`);
    }
    if (text !== undefined) {
      const checked = checkServersFile(text, where, env);
      problems.push(...checked.problems);
      fromFile = checked.servers;
    }
    if (config?.mcp) config.mcp.servers_file = where;
  }
  if (problems.length > 0 || config === undefined) throw new ConfigError(problems);
  config.mcp.servers = { ...fromFile, ...config.mcp.servers };
  return finish(config);
}

/** The file's text; '' for a default file that is not there. */
async function readConfigText(file: ConfigFile): Promise<string> {
  try {
    return await readFile(file.path, 'utf8');
  } catch (error) {
    const missing = (error as NodeJS.ErrnoException).code === 'ENOENT';
    if (missing && file.namedBy === undefined) return '';
    const named = file.namedBy === '--config' ? '--config' : '$IRIS_CONFIG';
    throw new ConfigError([missing ? `${file.path}: no such config file (named by ${named})` : `${file.path}: cannot read: ${messageOf(error)}`]);
  }
}

/** Parse TOML text into a validated, defaulted, frozen config. Pure; `servers_file` is not read. */
export function parseConfig(text: string, file: string, env: NodeJS.ProcessEnv = {}): Config {
  const { data, problems } = checkToml(text, env);
  if (problems.length > 0 || data === undefined) throw new ConfigError(located(file, problems));
  return finish(data as MutableConfig);
}

type MutableConfig = Config & { assistant: { timezone: string }; mcp: { servers_file: string; servers: Record<string, McpServerConfig> } };

function finish(config: MutableConfig): Config {
  if (config.assistant.timezone === '') config.assistant.timezone = systemTimeZone();
  return deepFreeze(config);
}

/** The first table header without its closing bracket ("[assistant", "[[x"), as a problem. */
function unclosedHeader(text: string): Problem | undefined {
  const lines = text.split(/\r?\n/);
  for (const [i, raw] of lines.entries()) {
    // Quoted parts may hold brackets and "#": take them out before looking.
    const line = raw.replace(/"(?:[^"\\]|\\.)*"|'[^']*'/g, '""').replace(/#.*$/, '').trim();
    const open = /^\[\[?/.exec(line)?.[0];
    if (open === undefined || line.includes(open === '[[' ? ']]' : ']')) continue;
    const close = open === '[[' ? ']]' : ']';
    return { line: i + 1, message: `the table header ${JSON.stringify(raw.trim())} is not closed: end it with "${close}" (${raw.trim()}${close})` };
  }
  return undefined;
}

/**
 * TOML checked against the schema: the data with its defaults filled in (absent when the
 * TOML itself does not parse), every problem with its line, and each key's line.
 */
function checkToml(text: string, env: NodeJS.ProcessEnv): { data?: unknown; problems: Problem[]; lineOf: (pointer: string) => number } {
  let ast: AST.TOMLProgram;
  try {
    ast = parseTOML(text);
  } catch (error) {
    const { lineNumber, message } = error as { lineNumber?: number; message: string };
    // The parser reads on past an unclosed "[assistant" into the next line and blames that one.
    const header = unclosedHeader(text);
    if (header !== undefined && header.line <= (lineNumber ?? Infinity)) return { problems: [header], lineOf: () => 1 };
    return { problems: [{ line: lineNumber ?? 1, message }], lineOf: () => 1 };
  }
  const lineOf = nearestLine(keyLines(ast));
  const problems: Problem[] = [];
  const data = substituteEnv(getStaticTOMLValue(ast), '', env, (pointer, message) =>
    problems.push({ line: lineOf(pointer), message }),
  );
  modelUnderStateDir(data, env);
  if (!validate(data)) {
    // A bad table name is reported once, by `propertyNames`, not again by the pattern inside it.
    for (const error of (validate.errors ?? []).filter((e) => e.propertyName === undefined)) problems.push({ line: lineOf(errorPointer(error)), message: describe(error, data) });
  }
  const config = data as Config;
  for (const [name, server] of Object.entries(config.mcp?.servers ?? {})) {
    if ((server.command === undefined) === (server.url === undefined)) {
      problems.push({
        line: lineOf(`/mcp/servers/${name}`),
        message: `[mcp.servers.${name}] needs exactly one of "command" (stdio) or "url" (HTTP)`,
      });
    }
  }
  return { data, problems, lineOf };
}

/**
 * An unset `[stt] model` under `$IRIS_STATE_DIR` when that is set: its directory is the models
 * dir `iris models fetch` writes to, and nothing may be written outside the state dir asked for.
 */
function modelUnderStateDir(data: unknown, env: NodeJS.ProcessEnv): void {
  if (!isObject(data)) return;
  const stt = data.stt ?? {};
  if (!isObject(stt) || stt.model !== undefined) return;
  data.stt = { ...stt, model: path.join(stateDir(env), 'models', DEFAULT_MODEL_FILE) };
}

/**
 * `[mcp] servers_file`: JSON in the common `{"mcpServers": {...}}` shape (Claude Desktop,
 * ollmcp), stdio `{command, args, env, cwd, disabled}` or HTTP `{url, type, headers}`, each
 * checked against the same server schema as an `[mcp.servers.NAME]` table. Pure.
 */
function checkServersFile(text: string, file: string, env: NodeJS.ProcessEnv): { servers: Record<string, McpServerConfig>; problems: string[] } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    return { servers: {}, problems: located(file, [{ line: jsonErrorLine(text, error), message: `not valid JSON: ${messageOf(error)}` }]) };
  }
  const lineOf = nearestLine(jsonKeyLines(text));
  const servers = isObject(parsed) ? parsed.mcpServers : undefined;
  if (!isObject(servers)) {
    return { servers: {}, problems: located(file, [{ line: lineOf('/mcpServers'), message: 'expected {"mcpServers": {"NAME": {...}, ...}}' }]) };
  }
  const problems: Problem[] = [];
  const out: Record<string, McpServerConfig> = {};
  for (const [name, raw] of Object.entries(servers)) {
    const at = `/mcpServers/${escapePointer(name)}`;
    const scope: Scope = { schema: mcpServerSchema, key: ['mcpServers', name], table: (key) => `"${key}"` };
    if (!isObject(raw)) {
      problems.push({ line: lineOf(at), message: `"mcpServers.${name}" must be an object, not ${describeType(raw)}` });
      continue;
    }
    const { disabled, type, ...rest } = raw;
    if (disabled !== undefined && typeof disabled !== 'boolean') {
      problems.push({ line: lineOf(`${at}/disabled`), message: `"mcpServers.${name}.disabled" must be a boolean, not ${describeType(disabled)} (${JSON.stringify(disabled)})` });
    }
    // `disabled` is the common shape's switch; IRIS's own `enabled` is checked like any key.
    const candidate: Record<string, unknown> = disabled === undefined ? { ...rest } : { ...rest, enabled: disabled !== true };
    if (typeof type === 'string' && rest.url !== undefined) candidate.transport = /sse/i.test(type) ? 'sse' : 'streamable-http';
    const server = substituteEnv(candidate, at, env, (pointer, message) => problems.push({ line: lineOf(pointer), message }));
    if (!validateServer(server)) {
      for (const error of validateServer.errors ?? []) problems.push({ line: lineOf(`${at}${errorPointer(error)}`), message: describe(error, server, scope) });
    } else if ((server.command === undefined) === (server.url === undefined)) {
      problems.push({ line: lineOf(at), message: `"mcpServers.${name}" needs exactly one of "command" (stdio) or "url" (HTTP)` });
    } else out[name] = server;
  }
  return { servers: out, problems: located(file, problems) };
}

/** A pointer's line, or its nearest parent's that has one (a defaulted key has none). */
function nearestLine(lines: ReadonlyMap<string, number>): (pointer: string) => number {
  return (pointer) => {
    for (let p = pointer; ; p = p.slice(0, p.lastIndexOf('/'))) {
      const line = lines.get(p);
      if (line !== undefined || p === '') return line ?? 1;
    }
  };
}

/** Where an ajv error points: the unknown key itself for `additionalProperties`. */
function errorPointer(error: ErrorObject): string {
  return error.keyword === 'additionalProperties'
    ? `${error.instancePath}/${escapePointer(String(error.params.additionalProperty))}`
    : error.instancePath;
}

function escapePointer(key: string): string {
  return key.replace(/~/g, '~0').replace(/\//g, '~1');
}

/**
 * The line of a JSON syntax error. Node names the offset ("at position 12"; Node 18 none at the
 * end of input); an error at the end is on the last line with text, not after it.
 */
function jsonErrorLine(text: string, error: unknown): number {
  const end = text.trimEnd().length;
  const position = Number(/at position (\d+)/.exec(messageOf(error))?.[1] ?? end);
  return text.slice(0, Math.min(position, end)).split('\n').length;
}

/** Every key's and element's line in valid JSON text, by JSON pointer (JSON.parse keeps none). */
function jsonKeyLines(text: string): Map<string, number> {
  const lines = new Map<string, number>();
  // Strings, brackets and bare scalars; commas and colons carry nothing and are skipped.
  const tokens = [...text.matchAll(/"(?:[^"\\]|\\.)*"|[{}[\]]|[^\s{}[\],:"]+/g)];
  let at = 0;
  let line = 1;
  let counted = 0;
  const lineAt = (index: number): number => {
    for (; counted < index; counted++) if (text[counted] === '\n') line++;
    return line;
  };
  const next = (): RegExpMatchArray => {
    const token = tokens[at++];
    if (token === undefined) throw new Error('unexpected end of JSON'); // JSON.parse accepted the text first
    return token;
  };
  const peek = (): string | undefined => tokens[at]?.[0];
  const value = (pointer: string): void => {
    const open = next()[0];
    if (open !== '{' && open !== '[') return;
    const close = open === '{' ? '}' : ']';
    for (let i = 0; peek() !== close; i++) {
      const start = open === '{' ? next() : tokens[at];
      const key = open === '{' ? escapePointer(JSON.parse(start?.[0] ?? '""') as string) : String(i);
      if (!lines.has(`${pointer}/${key}`)) lines.set(`${pointer}/${key}`, lineAt(start?.index ?? 0));
      value(`${pointer}/${key}`);
    }
    next();
  };
  value('');
  return lines;
}

/** Every key's line, by JSON pointer (`/ollama/url`), tables included. */
function keyLines(ast: AST.TOMLProgram): Map<string, number> {
  const lines = new Map<string, number>();
  const pointer = (path: readonly (string | number)[]): string =>
    path.map((k) => `/${escapePointer(String(k))}`).join('');
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

/** Where an ajv error happened: the schema checked, the key path to it, how a table is named. */
interface Scope {
  schema: SchemaNode;
  key: readonly string[];
  table: (key: string) => string;
}

interface SchemaNode {
  properties?: Record<string, unknown>;
  additionalProperties?: unknown;
}

const CONFIG_SCOPE: Scope = { schema: configSchema, key: [], table: (key) => `[${key}]` };

/** One ajv error in the words of the file it is about. */
function describe(error: ErrorObject, data: unknown, scope: Scope = CONFIG_SCOPE): string {
  const path = error.instancePath.split('/').slice(1).map((k) => k.replace(/~1/g, '/').replace(/~0/g, '~'));
  const key = [...scope.key, ...path].join('.');
  const value = path.reduce<unknown>((v, k) => (v as Record<string, unknown> | undefined)?.[k], data);
  const shown = JSON.stringify(value);
  switch (error.keyword) {
    case 'additionalProperties': {
      const extra = String(error.params.additionalProperty);
      const known = Object.keys(schemaAt(scope.schema, path)).join(', ');
      return key === ''
        ? `unknown section [${extra}] (known: ${known})`
        : `unknown key "${extra}" in ${scope.table(key)} (known: ${known})`;
    }
    case 'type':
      return `"${key}" must be ${article(String(error.params.type))}, not ${describeType(value)} (${shown})`;
    case 'enum':
      return `"${key}" must be one of ${(error.params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}, not ${shown}`;
    case 'propertyNames':
      return `[${key}."${String(error.params.propertyName)}"]: a name is 1–60 letters, digits, "_", "." or "-"`;
    case 'pattern':
      return /(^|\.)(uri|listen)$/.test(key) ? `"${key}" = ${shown} is not tcp://HOST:PORT` : `"${key}" ${error.message ?? 'is invalid'} (${shown})`;
    case 'maximum': {
      const reason = (schemaAt(scope.schema, path.slice(0, -1))[path.at(-1) ?? ''] as { maximumReason?: string } | undefined)?.maximumReason;
      return `"${key}" = ${shown} is more than ${String(error.params.limit)}${reason === undefined ? '' : `: ${reason}`}`;
    }
    case 'format':
      return error.params.format === 'iana-zone'
        ? `"${key}" = ${shown} is not an IANA time zone (e.g. "Europe/Berlin", "America/New_York")`
        : `"${key}" = ${shown} is not an http:// or https:// URL`;
    default:
      return `"${key}" ${error.message ?? 'is invalid'} (${shown})`;
  }
}

function schemaAt(root: SchemaNode, path: readonly string[]): Record<string, unknown> {
  let node = root;
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
