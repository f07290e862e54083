/**
 * IRIS's few typed errors: one base with a stable `code` and the `cause`, one subclass per
 * part. Expected aborts are re-thrown as they are; unexpected errors are wrapped.
 */
export class IrisError extends Error {
  override name: string = 'IrisError';
  readonly code: string;

  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }
}

/** A problem in the config file; `problems` are `FILE:LINE: message` lines. */
export class ConfigError extends IrisError {
  override name = 'ConfigError' as const;
  readonly problems: readonly string[];

  constructor(problems: readonly string[]) {
    super('config_invalid', problems.join('\n'));
    this.problems = problems;
  }
}

/** A tool failed in a way the caller (not the model) must hear about, e.g. bad state dir. */
export class ToolError extends IrisError {
  override name = 'ToolError' as const;
}

/** True for the error an `AbortSignal` produces, whatever its reason. */
export function isAbortError(error: unknown): boolean {
  return error instanceof Error && (error.name === 'AbortError' || error.name === 'TimeoutError');
}

/** The message of anything thrown, for one-line reports. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
