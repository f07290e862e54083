/**
 * The injected logger: namespaced, levelled, plain lines for journald (which stamps the time
 * itself). Nothing else in src/ writes to the console.
 */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

export interface Logger {
  debug(message: string): void;
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
  child(namespace: string): Logger;
}

const RANK: Record<LogLevel, number> = { debug: 0, info: 1, warn: 2, error: 3 };
/** sd-daemon(3) priority prefixes, so journald files each line at its level. */
const SYSLOG_PREFIX: Record<LogLevel, string> = { debug: '<7>', info: '<6>', warn: '<4>', error: '<3>' };

export interface LoggerOptions {
  /** Lowest level written; default "info". */
  level?: LogLevel;
  /** Where lines go; default stderr. */
  write?: (line: string) => void;
  /** Prefix lines with `<N>` for journald; default: when JOURNAL_STREAM is set. */
  journald?: boolean;
}

export function createLogger(namespace: string, options: LoggerOptions = {}): Logger {
  const min = RANK[options.level ?? 'info'];
  const write = options.write ?? ((line: string) => process.stderr.write(`${line}\n`));
  const journald = options.journald ?? process.env.JOURNAL_STREAM !== undefined;
  const emit = (level: LogLevel, message: string): void => {
    if (RANK[level] < min) return;
    write(`${journald ? SYSLOG_PREFIX[level] : ''}${level} ${namespace}: ${printable(message)}`);
  };
  return {
    debug: (m) => emit('debug', m),
    info: (m) => emit('info', m),
    warn: (m) => emit('warn', m),
    error: (m) => emit('error', m),
    child: (ns) => createLogger(`${namespace}:${ns}`, options),
  };
}

/**
 * Characters a terminal or a log viewer acts on instead of showing: C0 controls (ESC starts
 * the escape codes that recolour, retitle or rewrite a terminal), DEL, C1 controls (0x9B is a
 * one-byte CSI), and the bidirectional overrides and isolates that reorder a line's text.
 */
const UNPRINTABLE = /[\u0000-\u001F\u007F-\u009F\u202A-\u202E\u2066-\u2069]/g;
const UNPRINTABLE_BUT_LINES = /[\u0000-\u0008\u000B-\u001F\u007F-\u009F\u202A-\u202E\u2066-\u2069]/g;

/**
 * Text from a server, a peer or a model as a terminal or a log may show it: every control
 * character written out as an escape ("\x1b", "\u202e"), so it is seen and never acted on.
 * The one helper for it: the logger runs every line through it, and the CLI everything it
 * prints. `lines`: keep newlines and tabs (CLI output of several lines); a log line keeps none,
 * so a peer cannot start a line of its own.
 */
export function printable(text: string, { lines = false }: { lines?: boolean } = {}): string {
  return text.replace(lines ? UNPRINTABLE_BUT_LINES : UNPRINTABLE, (c) => {
    const code = c.charCodeAt(0);
    return code < 0x100 ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}

/** A logger that drops everything (tests, benchmarks). */
export const silentLogger: Logger = createLogger('silent', { write: () => undefined });
