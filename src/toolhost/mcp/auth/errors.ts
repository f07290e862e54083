/**
 * Why an MCP server's sign-in cannot go on, as a typed code, and the sentences a person hears
 * and reads about it. Every other file of auth/ throws these; servers.ts and the CLI read them.
 */
import { IrisError, messageOf } from '../../../errors.js';
import { printable } from '../../../log.js';

/**
 * Why a server cannot be used until something is done. `needs_sign_in`: a person must run
 * `iris mcp login NAME`; every other code is a problem signing in cannot fix by itself.
 */
export type SignInCode =
  /** A person must sign in (`iris mcp login NAME`, or a code said by voice). */
  | 'needs_sign_in'
  /** The server asks for credentials but offers no OAuth. */
  | 'no_sign_in'
  /** Metadata is hostile or broken: another issuer, plain HTTP off loopback, too big. */
  | 'bad_metadata'
  /** The authorization server does not advertise PKCE with S256. */
  | 'no_pkce'
  /** A redirect's `state` does not belong to this sign-in, or none is in progress. */
  | 'state'
  /** A redirect's `iss` names another issuer (RFC 9207). */
  | 'iss'
  /** The authorization server refused, or gave no token. */
  | 'refused'
  /** The `[oauth]` table or server entry cannot be used as it is. */
  | 'config'
  /** Metadata or token endpoint unreachable or too slow. */
  | 'unreachable';

/** A sign-in problem; `code` says which. */
export class SignInError extends IrisError {
  override name = 'SignInError' as const;
  declare readonly code: SignInCode;

  constructor(code: SignInCode, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
  }
}

/** What the person hears and reads when a server's sign-in is missing or has lapsed. */
export function signInSentence(name: string): string {
  return `The ${name} tools need you to sign in again: run iris mcp login ${name}`;
}

/** The SignInError in `error` or its causes. */
export function signInErrorOf(error: unknown): SignInError | undefined {
  for (let e = error, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) if (e instanceof SignInError) return e;
  return undefined;
}

/** A value from the network, safe in one log or terminal line: made printable, at most 200 characters. */
export function brief(value: unknown): string {
  const text = String(value);
  return printable(text.length > 200 ? `${text.slice(0, 200)}…` : text);
}

/**
 * One line for an HTTP refusal the SDK reports with the whole response body ("Error POSTing
 * to endpoint: <html>…"): the status, and what to check.
 */
export function describeAuthFailure(name: string, error: unknown): string | undefined {
  const signIn = signInErrorOf(error);
  if (signIn !== undefined) return signIn.message;
  const code = (error as { code?: unknown }).code;
  const text = messageOf(error);
  if (code === 401 || /\bHTTP 401\b|returned 401/.test(text)) {
    return `the server refused IRIS's credentials (HTTP 401 Unauthorized); check the Authorization header in [mcp.servers.${name}] headers, or run iris mcp login ${name}`;
  }
  if (code === 403 || /\bHTTP 403\b|returned 403/.test(text)) return 'the server refused access (HTTP 403 Forbidden)';
  return undefined;
}
