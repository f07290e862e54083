/**
 * OAuth 2.1 for MCP servers over HTTP (the MCP authorization spec, 2025-06-18 and 2025-11-25).
 * The SDK's `auth()` does the protocol: protected-resource and authorization-server discovery,
 * client registration (pre-registered, client ID metadata document, dynamic), PKCE, the
 * resource indicator, the code exchange and refresh; it stamps what it stores with the
 * issuer and ignores what another issuer stamped. This provider keeps what it is given in the
 * state dir (store.ts) and adds what SDK 1.32.2 lacks: metadata checked before anything is
 * sent to it (discovery.ts, fetch.ts), refresh before the access token expires, and a daemon
 * that never starts a sign-in itself: it reports "needs sign-in" and its tools say how.
 * `iris mcp login` (cli/login.ts) signs in; device.ts signs in by a code said aloud.
 */
import { randomBytes } from 'node:crypto';
import {
  refreshAuthorization,
  type extractWWWAuthenticateParams,
  type OAuthClientProvider,
  type OAuthDiscoveryState,
} from '@modelcontextprotocol/sdk/client/auth.js';
import { OAuthError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { McpServerConfig } from '../../../config/schema.js';
import { messageOf } from '../../../errors.js';
import type { Logger } from '../../../log.js';
import type { JsonStore } from '../../api.js';
import { discover, sameIssuer } from './discovery.js';
import { SignInError, signInErrorOf, signInSentence } from './errors.js';
import type { AuthDoc } from './store.js';

/** Refresh this long before the access token expires (ms), or at half its lifetime when that is shorter. */
const REFRESH_AHEAD_MS = 60_000;
/** The OAuth error codes (RFC 6749 §5.2) that mean the refresh token or the client is no longer accepted. */
const REFUSED_GRANT = new Set(['invalid_grant', 'invalid_client', 'unauthorized_client']);

export interface ProviderOptions {
  name: string;
  config: McpServerConfig;
  store: JsonStore<AuthDoc>;
  /** Bounded fetch for discovery and token requests. */
  fetchFn: FetchLike;
  log: Logger;
  /** Set by `iris mcp login`: the redirect and where the authorization URL goes. Unset: the daemon. */
  interactive?: { redirectUrl: string; onAuthorizationUrl: (url: URL) => void };
}

/**
 * The SDK's OAuthClientProvider over the state dir. In the daemon it never starts a sign-in:
 * where the SDK would send a person to the authorization server it throws `needs_sign_in`,
 * and it refuses to register a client or discover anew (what `iris mcp login` checked is used).
 */
export class StoredOAuthProvider implements OAuthClientProvider {
  readonly #o: ProviderOptions;
  #doc: AuthDoc | undefined;
  #verifier: string | undefined;
  #state: string | undefined;
  #refreshing: Promise<void> | undefined;
  /** The last 401/403 challenge the server sent (resource_metadata, scope, error). */
  challenge: ReturnType<typeof extractWWWAuthenticateParams> = {};

  /** `[oauth] client_metadata_url`: the SDK uses it as the client ID where the server supports that. */
  readonly clientMetadataUrl?: string;

  constructor(options: ProviderOptions) {
    this.#o = options;
    const url = options.config.oauth?.client_metadata_url;
    if (url !== undefined) this.clientMetadataUrl = url;
  }

  get redirectUrl(): string {
    return this.#o.interactive?.redirectUrl ?? this.#doc?.redirect_url ?? 'http://127.0.0.1/callback';
  }

  get clientMetadata(): OAuthClientMetadata {
    const scope = this.#o.config.oauth?.scope;
    return {
      client_name: 'IRIS voice assistant',
      redirect_uris: [this.redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
      // RFC 8252 via OpenID registration: a native app, so any loopback port is its redirect.
      ...({ application_type: 'native' } as object),
      ...(scope === undefined ? {} : { scope }),
    };
  }

  /** The state a sign-in sent, to compare with the redirect's. */
  get expectedState(): string | undefined {
    return this.#state;
  }

  state(): string {
    this.#state = randomBytes(32).toString('base64url');
    return this.#state;
  }

  async load(): Promise<AuthDoc> {
    this.#doc ??= (await this.#o.store.read()) ?? { version: 1 };
    return this.#doc;
  }

  async #change(change: (doc: AuthDoc) => void): Promise<void> {
    const { value } = await this.#o.store.update((current) => {
      const doc = current ?? { version: 1 as const };
      change(doc);
      return { value: doc, result: undefined };
    });
    this.#doc = value;
  }

  async discoveryState(): Promise<OAuthDiscoveryState | undefined> {
    const doc = await this.load();
    if (this.#o.interactive !== undefined) return doc.discovery;
    if (this.challenge.error === 'insufficient_scope' && this.challenge.scope !== undefined) {
      const scope = this.challenge.scope;
      await this.#change((d) => (d.scope_needed = scope));
      throw this.#needsSignIn();
    }
    const pinned = this.#o.config.oauth?.issuer;
    if (doc.discovery !== undefined && (pinned === undefined || sameIssuer(pinned, doc.discovery.authorizationServerUrl))) return doc.discovery;
    if (doc.discovery !== undefined) throw this.#needsSignIn(); // signed in elsewhere than [oauth] issuer now names
    // Never signed in: say whether a sign-in could work at all, in one line.
    const serverUrl = new URL(this.#o.config.url ?? '');
    try {
      await discover(serverUrl, { fetchFn: this.#o.fetchFn, resourceMetadataUrl: this.challenge.resourceMetadataUrl, issuer: this.#o.config.oauth?.issuer, grant: 'authorization_code' });
    } catch (error) {
      const reason = messageOf(error);
      throw new SignInError(signInErrorOf(error)?.code ?? 'no_sign_in', `the server asks for credentials (HTTP 401) but ${reason.startsWith('it ') ? reason : `cannot be signed in to: ${reason}`}; set an Authorization header in [mcp.servers.${this.#o.name}] headers, or fix its OAuth setup`);
    }
    throw this.#needsSignIn();
  }

  async saveDiscoveryState(state: OAuthDiscoveryState): Promise<void> {
    if (this.#o.interactive === undefined) return; // the daemon keeps what the sign-in checked
    await this.#change((d) => (d.discovery = state));
  }

  async clientInformation(): Promise<OAuthClientInformationMixed | undefined> {
    const { oauth } = this.#o.config;
    if (oauth?.client_id !== undefined) {
      return { client_id: oauth.client_id, ...(oauth.client_secret === undefined ? {} : { client_secret: oauth.client_secret }), ...(oauth.issuer === undefined ? {} : { issuer: oauth.issuer }) };
    }
    const client = (await this.load()).client;
    if (client === undefined && this.#o.interactive === undefined) throw this.#needsSignIn();
    return client;
  }

  async saveClientInformation(client: OAuthClientInformationMixed): Promise<void> {
    if (this.#o.config.oauth?.client_id !== undefined) return; // configured, not stored
    await this.#change((d) => (d.client = client));
  }

  async tokens(): Promise<OAuthTokens | undefined> {
    if (this.#o.interactive !== undefined) return undefined; // a sign-in starts afresh
    const doc = await this.load();
    if (doc.tokens?.refresh_token !== undefined && doc.expires_at !== undefined) {
      const aheadMs = Math.min(REFRESH_AHEAD_MS, (doc.lifetime_ms ?? 0) / 2);
      if (Date.now() >= doc.expires_at - aheadMs) {
        this.#refreshing ??= this.#refresh().finally(() => (this.#refreshing = undefined));
        await this.#refreshing;
      }
    }
    return this.#doc?.tokens;
  }

  /** Refresh ahead of expiry. A refused refresh token drops the tokens (the next request is refused: needs sign-in). */
  async #refresh(): Promise<void> {
    this.#doc = undefined; // another IRIS process may have refreshed already (refresh tokens rotate)
    const doc = await this.load();
    if (doc.expires_at !== undefined && Date.now() < doc.expires_at - Math.min(REFRESH_AHEAD_MS, (doc.lifetime_ms ?? 0) / 2)) return;
    const { discovery, tokens } = doc;
    const client = await this.clientInformation().catch(() => undefined);
    if (discovery === undefined || tokens?.refresh_token === undefined || client === undefined) return;
    // A refresh token goes back only to the server that issued it: a sign-in begun elsewhere
    // (new discovery stored, old tokens kept) must not send it to another authorization server.
    if (tokens.issuer === undefined || !sameIssuer(tokens.issuer, discovery.authorizationServerUrl)) {
      this.#o.log.warn(`${this.#o.name}: the stored tokens are from another authorization server; not refreshed`);
      return;
    }
    try {
      const fresh = await refreshAuthorization(discovery.authorizationServerUrl, {
        ...(discovery.authorizationServerMetadata === undefined ? {} : { metadata: discovery.authorizationServerMetadata }),
        clientInformation: client,
        refreshToken: tokens.refresh_token,
        ...(discovery.resourceMetadata === undefined ? {} : { resource: discovery.resourceMetadata.resource }),
        fetchFn: this.#o.fetchFn,
      });
      await this.saveTokens({ ...fresh, ...(tokens.issuer === undefined ? {} : { issuer: tokens.issuer }) });
      this.#o.log.info(`${this.#o.name}: access token refreshed before it expired${fresh.expires_in === undefined ? '' : `; valid ${fresh.expires_in} s`}`);
    } catch (error) {
      const text = messageOf(error).split('\n')[0] ?? '';
      // The SDK parses the OAuth error answer into an OAuthError carrying its code.
      if (error instanceof OAuthError && REFUSED_GRANT.has(error.errorCode)) {
        this.#o.log.warn(`${this.#o.name}: the refresh token was refused (${text})`);
        // Only if it is still the stored one: another IRIS process (the CLI beside the daemon)
        // may have refreshed first, and refresh tokens rotate, so this one was used up, not revoked.
        await this.#change((d) => {
          if (d.tokens?.refresh_token !== tokens.refresh_token) return;
          delete d.tokens;
          delete d.expires_at;
          delete d.lifetime_ms;
        });
      } else this.#o.log.warn(`${this.#o.name}: refreshing the access token failed (${text}); trying the old one`);
    }
  }

  async saveTokens(tokens: OAuthTokens): Promise<void> {
    const now = Date.now();
    await this.#change((d) => {
      d.tokens = tokens;
      if (tokens.expires_in === undefined) {
        delete d.expires_at;
        delete d.lifetime_ms;
      } else {
        d.lifetime_ms = tokens.expires_in * 1000;
        d.expires_at = now + d.lifetime_ms;
      }
      const granted = new Set((tokens.scope ?? '').split(' '));
      if (d.scope_needed !== undefined && d.scope_needed.split(' ').every((s) => granted.has(s))) delete d.scope_needed;
    });
  }

  redirectToAuthorization(url: URL): void {
    if (this.#o.interactive === undefined) throw this.#needsSignIn();
    this.#o.interactive.onAuthorizationUrl(url);
  }

  saveCodeVerifier(verifier: string): void {
    this.#verifier = verifier;
  }

  codeVerifier(): string {
    if (this.#verifier === undefined) throw new SignInError('state', 'no sign-in is in progress');
    return this.#verifier;
  }

  async invalidateCredentials(scope: 'all' | 'client' | 'tokens' | 'verifier' | 'discovery'): Promise<void> {
    if (scope === 'verifier') {
      this.#verifier = undefined;
      return;
    }
    await this.#change((d) => {
      if (scope === 'all' || scope === 'tokens') {
        delete d.tokens;
        delete d.expires_at;
        delete d.lifetime_ms;
      }
      if (scope === 'all' || scope === 'client') delete d.client;
      if (scope === 'all' || scope === 'discovery') delete d.discovery;
    });
  }

  #needsSignIn(): SignInError {
    return new SignInError('needs_sign_in', signInSentence(this.#o.name));
  }
}
