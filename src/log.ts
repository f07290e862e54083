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
    write(`${journald ? SYSLOG_PREFIX[level] : ''}${level} ${namespace}: ${message}`);
  };
  return {
    debug: (m) => emit('debug', m),
    info: (m) => emit('info', m),
    warn: (m) => emit('warn', m),
    error: (m) => emit('error', m),
    child: (ns) => createLogger(`${namespace}:${ns}`, options),
  };
}

/** A logger that drops everything (tests, benchmarks). */
export const silentLogger: Logger = createLogger('silent', { write: () => undefined });
