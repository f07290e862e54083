/** The wiring of sign-in into an HTTP connection: which provider, and the transport's fetch. */
import { ClientCredentialsProvider } from '@modelcontextprotocol/sdk/client/auth-extensions.js';
import { extractWWWAuthenticateParams, type OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { McpServerConfig } from '../../../config/schema.js';
import type { Logger } from '../../../log.js';
import { SignInError } from './errors.js';
import { boundedFetch } from './fetch.js';
import { StoredOAuthProvider } from './provider.js';
import { authStore } from './store.js';

/** What an HTTP connection needs to sign in: the provider and the fetch that watches the server's challenges. */
export interface HttpAuth {
  authProvider: OAuthClientProvider;
  fetch: FetchLike;
}

export interface HttpAuthOptions {
  stateDir: string;
  log: Logger;
  /** Limit for each discovery, registration or token request (ms). */
  timeoutMs: number;
}

/**
 * The authProvider for an HTTP server: none when a static Authorization header is
 * configured; the SDK's ClientCredentialsProvider for `grant = "client_credentials"`;
 * otherwise the stored sign-in.
 */
export function httpAuth(name: string, config: McpServerConfig, options: HttpAuthOptions): HttpAuth | undefined {
  if (config.url === undefined) return undefined;
  if (Object.keys(config.headers ?? {}).some((h) => h.toLowerCase() === 'authorization')) return undefined;
  const serverUrl = new URL(config.url);
  const bounded = boundedFetch(options.timeoutMs);
  const oauth = config.oauth;
  if (oauth?.grant === 'client_credentials') {
    if (oauth.client_id === undefined || oauth.client_secret === undefined || oauth.issuer === undefined) {
      throw new SignInError('config', `[mcp.servers.${name}.oauth] grant = "client_credentials" needs client_id, client_secret and issuer (the secret is sent only to that authorization server)`);
    }
    const provider = new ClientCredentialsProvider({
      clientId: oauth.client_id, clientSecret: oauth.client_secret, expectedIssuer: oauth.issuer, clientName: 'IRIS voice assistant',
      ...(oauth.scope === undefined ? {} : { scope: oauth.scope }),
    });
    return { authProvider: provider, fetch: watching(serverUrl, bounded, () => undefined) };
  }
  const provider = new StoredOAuthProvider({ name, config, store: authStore(options.stateDir, name, options.log), fetchFn: bounded, log: options.log });
  return { authProvider: provider, fetch: watching(serverUrl, bounded, (challenge) => (provider.challenge = challenge)) };
}

/**
 * The transport's fetch: requests to the MCP server's origin pass untouched (they stream),
 * and a 401/403 challenge is noted; metadata and other origins (the authorization server)
 * are bounded.
 */
function watching(serverUrl: URL, bounded: FetchLike, onChallenge: (c: ReturnType<typeof extractWWWAuthenticateParams>) => void): FetchLike {
  return async (input, init) => {
    const url = new URL(String(input instanceof Request ? input.url : input));
    if (url.origin !== serverUrl.origin || url.pathname.startsWith('/.well-known/')) return bounded(input, init);
    const response = await fetch(input, init);
    if (response.status === 401 || response.status === 403) onChallenge(extractWWWAuthenticateParams(response));
    return response;
  };
}
