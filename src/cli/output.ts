/**
 * What a command prints and how it fails (CONTRACT.md): `--json` is exactly one JSON document
 * on stdout, text is for people; a failure is an exit code and a one-line reason on stderr,
 * given by throwing (main.ts's run() is the one place that prints it).
 */
import { Option } from 'commander';
import { printable } from '../log.js';
import { resultText, type CallToolResult } from '../toolhost/api.js';

export const EXIT = { ok: 0, failed: 1, usage: 2, config: 78 } as const;

/** A failure with the exit code it maps to and a one-line reason. */
export class Exit extends Error {
  constructor(readonly code: number, message: string) {
    super(message);
  }
}

/** Prints a line of output: a server's, a peer's or a model's words in it are made printable. */
export const print = (text: string): void => void process.stdout.write(`${printable(text, { lines: true })}\n`);
export const printJson = (value: unknown): void => print(JSON.stringify(value, null, 2));

/** The `--json` option of a command whose result `output` prints. */
export const jsonOption = (description = 'print one JSON document'): Option => new Option('--json', description);

/**
 * A command's result: with `--json` the one JSON document `json`, else the lines `text` makes
 * for people (called only then, so it may work out what only the text needs).
 */
export function output(json: boolean | undefined, value: unknown, text: () => Iterable<string>): void {
  if (json === true) return printJson(value);
  for (const line of text()) print(line);
}

/** A tool's result (`iris tools call`, `iris timers`): exit 1 when it is an error. */
export function outputToolResult(result: CallToolResult, json: boolean | undefined): void {
  output(json, result, () => [resultText(result)]);
  if (result.isError === true) process.exitCode = EXIT.failed;
}
