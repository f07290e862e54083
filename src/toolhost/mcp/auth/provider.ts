/**
 * OAuth 2.1 for MCP servers over HTTP (the MCP authorization spec, 2025-06-18 and 2025-11-25).
 * The SDK's `auth()` does the protocol: protected-resource and authorization-server discovery,
 * client registration (pre-registered, client ID metadata document, dynamic), PKCE, the
 * resource indicator, the code exchange and refresh; it stamps what it stores with the
 * issuer and ignores what another issuer stamped. This file keeps what it is given in the
 * state dir (mode 0600) and adds what SDK 1.32.2 lacks: metadata checked before anything is
 * sent to it (its issuer, HTTPS off loopback, PKCE S256 advertised, bounded size and time),
 * refresh before the access token expires, and a daemon that never starts a sign-in itself:
 * it reports "needs sign-in" and its tools say how. `iris mcp login` (cli/login.ts) signs in.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ClientCredentialsProvider } from '@modelcontextprotocol/sdk/client/auth-extensions.js';
import {
  discoverAuthorizationServerMetadata,
  discoverOAuthProtectedResourceMetadata,
  extractWWWAuthenticateParams,
  refreshAuthorization,
  type OAuthClientProvider,
  type OAuthDiscoveryState,
} from '@modelcontextprotocol/sdk/client/auth.js';
import { OAuthTokensSchema, type OAuthClientInformationMixed, type OAuthClientMetadata, type OAuthProtectedResourceMetadata, type OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { McpServerConfig } from '../../../config/schema.js';
import { IrisError, isAbortError, messageOf } from '../../../errors.js';
import { printable, type Logger } from '../../../log.js';
import type { JsonStore } from '../../api.js';
import { createJsonStore } from '../../store.js';
import { timerMs } from '../../../timer.js';

/**
 * Why a server cannot be used until something is done. `needs_sign_in`: a person must run
 * `iris mcp login NAME`; every other code is a problem signing in cannot fix by itself
 * (`no_sign_in`: the server asks for credentials but offers no OAuth; `bad_metadata`,
 * `no_pkce`, `state`, `iss`, `refused`, `config`, `unreachable`).
 */
export class SignInError extends IrisError {
  override name = 'SignInError' as const;
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

/** Metadata, registration and token answers are small: a bigger one is broken or hostile (bytes). */
const MAX_AUTH_BODY_BYTES = 256 * 1024;
/** Refresh this long before the access token expires (ms), or at half its lifetime when that is shorter. */
const REFRESH_AHEAD_MS = 60_000;

/**
 * fetch for everything but the MCP endpoint itself (metadata, registration, tokens): answers
 * are read whole, at most MAX_AUTH_BODY_BYTES, within `timeoutMs`, so a huge or slow answer
 * is a clear error instead of a hang or an out-of-memory daemon.
 */
export function boundedFetch(timeoutMs: number): FetchLike {
  return async (input, init) => {
    const url = String(input instanceof Request ? input.url : input);
    const where = new URL(url).origin;
    const signal = AbortSignal.timeout(timerMs(timeoutMs));
    try {
      const response = await fetch(input, { ...init, signal });
      const chunks: Uint8Array[] = [];
      let size = 0;
      const reader = response.body?.getReader() as ReadableStreamDefaultReader<Uint8Array> | undefined;
      for (let chunk = await reader?.read(); chunk !== undefined && !chunk.done; chunk = await reader?.read()) {
        size += chunk.value.byteLength;
        if (size > MAX_AUTH_BODY_BYTES) {
          await reader?.cancel();
          throw new SignInError('bad_metadata', `${url} answered with more than ${MAX_AUTH_BODY_BYTES / 1024} KiB; refused`);
        }
        chunks.push(chunk.value);
      }
      const body = size === 0 || response.status === 204 || response.status === 304 ? null : Buffer.concat(chunks);
      return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
    } catch (error) {
      if (error instanceof SignInError) throw error;
      if (isAbortError(error) || signal.aborted) throw new SignInError('unreachable', `${url} did not answer within ${timeoutMs / 1000} s`);
      throw new SignInError('unreachable', `${where} could not be reached (${messageOf(error)})`, { cause: error });
    }
  };
}

/** A value from the network, safe in one log or terminal line: made printable, at most 200 characters. */
export function brief(value: unknown): string {
  const text = String(value);
  return printable(text.length > 200 ? `${text.slice(0, 200)}…` : text);
}

/** 127.0.0.0/8, ::1 and localhost: the only places plain HTTP is accepted. */
function isLoopback(url: URL): boolean {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/** An endpoint metadata names: HTTPS, or HTTP on loopback only. */
function checkEndpoint(what: string, value: string): void {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new SignInError('bad_metadata', `the ${what} "${brief(value)}" is not a URL; refused`);
  }
  if (url.protocol === 'https:' || (url.protocol === 'http:' && isLoopback(url))) return;
  throw new SignInError('bad_metadata', `the ${what} ${url.href} is not HTTPS; refused (plain HTTP only on loopback)`);
}

/** RFC 8414 §3.3: the issuer is the URL metadata was found for; one trailing slash does not matter. */
export function sameIssuer(a: string, b: string): boolean {
  const norm = (s: string): string => {
    try {
      return new URL(s).href.replace(/\/$/, '');
    } catch {
      return s.replace(/\/$/, '');
    }
  };
  return norm(a) === norm(b);
}

export interface DiscoverOptions {
  fetchFn: FetchLike;
  /** The 401's `resource_metadata` hint; without it the well-known paths. */
  resourceMetadataUrl?: URL | undefined;
  /** `[oauth] issuer`: only this authorization server is accepted. */
  issuer?: string | undefined;
  grant: 'authorization_code' | 'client_credentials' | 'device_code';
}

/**
 * Find and check the server's protected-resource metadata (the 401's hint, then the
 * well-known paths) and its authorization server's metadata (OAuth, then OpenID discovery,
 * as the SDK tries them). Throws a SignInError saying what is wrong; nothing is stored.
 */
export async function discover(serverUrl: URL, options: DiscoverOptions): Promise<OAuthDiscoveryState> {
  const { fetchFn } = options;
  let resourceMetadata: OAuthProtectedResourceMetadata | undefined;
  try {
    resourceMetadata = await discoverOAuthProtectedResourceMetadata(serverUrl, options.resourceMetadataUrl ? { resourceMetadataUrl: options.resourceMetadataUrl } : {}, fetchFn);
  } catch (error) {
    if (error instanceof SignInError) throw error;
    // None: the 2025-03-26 rule, the server's origin is its authorization server.
  }
  const advertised = resourceMetadata?.authorization_servers?.[0];
  const authorizationServerUrl = advertised ?? new URL('/', serverUrl).href;
  checkEndpoint('authorization server', authorizationServerUrl);
  if (options.issuer !== undefined && !sameIssuer(options.issuer, authorizationServerUrl)) {
    throw new SignInError('bad_metadata', `the server sends IRIS to the authorization server ${authorizationServerUrl}, not to the configured issuer ${options.issuer}; refused`);
  }
  // The SDK's OpenID metadata schema drops fields it does not name (the device endpoint,
  // authorization_response_iss_parameter_supported): keep the document as it came.
  let document: Record<string, unknown> = {};
  const keeping: FetchLike = async (input, init) => {
    const response = await fetchFn(input, init);
    if (response.ok) document = ((await response.clone().json().catch(() => ({}))) ?? {}) as Record<string, unknown>;
    return response;
  };
  let metadata;
  try {
    metadata = await discoverAuthorizationServerMetadata(authorizationServerUrl, { fetchFn: keeping });
    if (metadata !== undefined && document.issuer === metadata.issuer) metadata = { ...document, ...metadata };
  } catch (error) {
    if (error instanceof SignInError) throw error;
    throw new SignInError('bad_metadata', `the authorization server metadata of ${authorizationServerUrl} is not usable (${messageOf(error).split('\n')[0] ?? ''})`);
  }
  if (metadata === undefined) {
    throw new SignInError('no_sign_in', resourceMetadata === undefined
      ? `it publishes no OAuth metadata (no protected-resource metadata, no authorization server metadata at ${authorizationServerUrl})`
      : `its authorization server ${authorizationServerUrl} publishes no metadata`);
  }
  if (!sameIssuer(metadata.issuer, authorizationServerUrl)) {
    throw new SignInError('bad_metadata', `the metadata of ${authorizationServerUrl} names another issuer, ${brief(metadata.issuer)}; refused`);
  }
  const endpoints = metadata as Record<string, unknown>;
  for (const key of ['authorization_endpoint', 'token_endpoint', 'registration_endpoint', 'revocation_endpoint', 'device_authorization_endpoint']) {
    if (typeof endpoints[key] === 'string') checkEndpoint(key.replace(/_/g, ' '), endpoints[key]);
  }
  if (options.grant === 'authorization_code' && !(metadata.code_challenge_methods_supported ?? []).includes('S256')) {
    throw new SignInError('no_pkce', `the authorization server ${authorizationServerUrl} does not advertise PKCE with S256 (code_challenge_methods_supported), which the MCP specification requires; refused`);
  }
  return {
    authorizationServerUrl,
    authorizationServerMetadata: metadata,
    ...(resourceMetadata === undefined ? {} : { resourceMetadata }),
    ...(options.resourceMetadataUrl === undefined ? {} : { resourceMetadataUrl: options.resourceMetadataUrl.href }),
  };
}

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
      // The SDK's error classes (InvalidGrantError …) or the OAuth codes; a description is optional.
      if (/invalid[_ ]?grant|invalid[_ ]?client|unauthorized[_ ]?client/i.test(`${(error as Error).name} ${text}`)) {
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

const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
/** RFC 8628 §3.5: poll every 5 s unless the server says otherwise; slow_down adds 5 s. */
const DEVICE_INTERVAL_S = 5;

/** An OAuth error answer in a few words for one log line: the server's text is untrusted. */
function oauthError({ status, json }: { status: number; json: Record<string, unknown> }): string {
  return typeof json.error === 'string' ? brief(json.error.slice(0, 80)) : `HTTP ${status}`;
}

export interface DeviceSignIn {
  /** What the person hears: where to go and the code to enter. */
  sentence: string;
  /** Resolves true once signed in (tokens stored), false when the code expired or was refused. */
  done: Promise<boolean>;
}

/**
 * A sign-in by voice (RFC 8628, the device authorization grant; no MCP spec version has it):
 * when the authorization server offers it to IRIS's pre-registered client, the daemon asks
 * for a user code, says where to enter it, and polls the token endpoint until the person has
 * signed in on any device. Undefined when it cannot be used (then `iris mcp login`).
 */
export async function startDeviceSignIn(name: string, config: McpServerConfig, options: HttpAuthOptions & { signal: AbortSignal }): Promise<DeviceSignIn | undefined> {
  const { oauth } = config;
  if (config.url === undefined || oauth?.client_id === undefined || oauth.grant === 'client_credentials') return undefined;
  // Nobody watches a sign-in the daemon starts: a client secret goes only to the pinned issuer.
  if (oauth.client_secret !== undefined && oauth.issuer === undefined) {
    options.log.warn(`${name}: no sign-in by code with a client_secret but no [oauth] issuer to send it to`);
    return undefined;
  }
  const fetchFn = boundedFetch(options.timeoutMs);
  const store = authStore(options.stateDir, name, options.log);
  const doc = (await store.read()) ?? { version: 1 as const };
  const discovery = doc.discovery ?? await discover(new URL(config.url), { fetchFn, issuer: oauth.issuer, grant: 'device_code' }).catch(() => undefined);
  const metadata = discovery?.authorizationServerMetadata as (Record<string, unknown> & { token_endpoint?: string; grant_types_supported?: string[] }) | undefined;
  const endpoint = metadata?.device_authorization_endpoint;
  if (discovery === undefined || metadata === undefined || typeof endpoint !== 'string' || typeof metadata.token_endpoint !== 'string') return undefined;
  if (metadata.grant_types_supported !== undefined && !metadata.grant_types_supported.includes(DEVICE_GRANT)) return undefined;

  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' };
  const client: Record<string, string> = {};
  if (oauth.client_secret === undefined) client.client_id = oauth.client_id;
  else headers.authorization = `Basic ${Buffer.from(`${encodeURIComponent(oauth.client_id)}:${encodeURIComponent(oauth.client_secret)}`).toString('base64')}`;
  const resource = discovery.resourceMetadata?.resource;
  const scope = [...new Set([doc.scope_needed, oauth.scope, discovery.resourceMetadata?.scopes_supported?.join(' ')].flatMap((x) => x?.split(' ') ?? []).filter((x) => x !== ''))].join(' ');
  const post = async (url: string, body: Record<string, string>): Promise<{ status: number; json: Record<string, unknown> }> => {
    const response = await fetchFn(url, { method: 'POST', headers, body: new URLSearchParams({ ...client, ...body, ...(resource === undefined ? {} : { resource }) }) });
    return { status: response.status, json: (await response.json().catch(() => ({}))) as Record<string, unknown> };
  };
  const started = await post(endpoint, scope === '' ? {} : { scope });
  const { device_code: deviceCode, user_code: userCode, verification_uri: where, expires_in: expiresIn, interval } = started.json;
  if (started.status !== 200 || typeof deviceCode !== 'string' || typeof userCode !== 'string' || typeof where !== 'string') {
    options.log.warn(`${name}: the authorization server refused a sign-in by code (${oauthError(started)})`);
    return undefined;
  }
  checkEndpoint('verification address', where);
  // Both are said word for word as IRIS's own sentence: only a plain code and the address's
  // host and path, never other text the server put there.
  if (!/^[A-Za-z0-9-]{4,16}$/.test(userCode)) {
    options.log.warn(`${name}: the authorization server's user code is not a plain code; no sign-in by code`);
    return undefined;
  }
  const address = new URL(where);
  const said = `${address.host}${address.pathname === '/' ? '' : address.pathname}`.slice(0, 80);
  const tokenEndpoint = metadata.token_endpoint;
  // At most 30 minutes, polled no faster than every DEVICE_INTERVAL_S, whatever the server says.
  const until = Date.now() + Math.min(typeof expiresIn === 'number' ? expiresIn : 600, 1800) * 1000;
  const done = (async (): Promise<boolean> => {
    let everyS = Math.max(typeof interval === 'number' ? interval : 0, DEVICE_INTERVAL_S);
    while (Date.now() < until) {
      await sleep(everyS * 1000, undefined, { signal: options.signal });
      const answer = await post(tokenEndpoint, { grant_type: DEVICE_GRANT, device_code: deviceCode }).catch((error: unknown) => ({ status: 0, json: { error: messageOf(error) } }));
      if (answer.status === 200) {
        const tokens = OAuthTokensSchema.parse(answer.json);
        await store.update((current) => ({ value: { ...(current ?? { version: 1 as const }), discovery }, result: undefined }));
        const provider = new StoredOAuthProvider({ name, config, store, fetchFn, log: options.log });
        await provider.saveTokens({ ...tokens, issuer: discovery.authorizationServerUrl });
        options.log.info(`${name}: signed in by code`);
        return true;
      }
      if (answer.json.error === 'slow_down') everyS += DEVICE_INTERVAL_S;
      else if (answer.json.error !== 'authorization_pending') {
        options.log.warn(`${name}: the sign-in by code ended (${oauthError(answer)})`);
        return false;
      }
    }
    options.log.warn(`${name}: the sign-in code expired unused`);
    return false;
  })().catch((error: unknown) => {
    if (!options.signal.aborted) options.log.warn(`${name}: the sign-in by code failed (${messageOf(error)})`);
    return false;
  });
  return { sentence: `To sign in to ${name}, go to ${address.protocol}//${said} and enter the code ${userCode}.`, done };
}
