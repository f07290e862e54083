/** Where one server's sign-in is kept: `<state dir>/mcp-auth/<name>.json`, owner-only. */
import { join } from 'node:path';
import type { OAuthDiscoveryState } from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthClientInformationMixed, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import type { Logger } from '../../../log.js';
import type { JsonStore } from '../../api.js';
import { createJsonStore } from '../../store.js';

/** One server's sign-in, as kept in `<state dir>/mcp-auth/<name>.json`. */
export interface AuthDoc {
  version: 1;
  /** The loopback redirect the last sign-in used. */
  redirect_url?: string;
  /** Discovery as checked at sign-in: the daemon reuses it and never trusts a new document. */
  discovery?: OAuthDiscoveryState;
  /** A registered client (stamped with its issuer by the SDK). */
  client?: OAuthClientInformationMixed;
  /** Stamped with their issuer by the SDK; tokens of another issuer are never sent. */
  tokens?: OAuthTokens;
  /** When the access token expires (epoch ms), and how long it was given for (ms). */
  expires_at?: number;
  lifetime_ms?: number;
  /** A scope a 403 insufficient_scope asked for: the next sign-in asks for it too. */
  scope_needed?: string;
}

/** Where tokens live: the state dir, owner-only. */
export function authStore(stateDir: string, name: string, log: Logger): JsonStore<AuthDoc> {
  return createJsonStore<AuthDoc>(join(stateDir, 'mcp-auth'), encodeURIComponent(name), log, 1, { mode: 0o600, dirMode: 0o700 });
}
