/**
 * `iris mcp login NAME` / `logout NAME`: a person signs IRIS in to an MCP server that asks for
 * OAuth. The authorization URL is printed (never opened: the browser may be on another
 * machine); the sign-in completes on the loopback redirect (http://127.0.0.1:PORT/callback)
 * or on the redirected address pasted on standard input. The redirect's `state` and RFC 9207
 * `iss` are checked before the code is exchanged; nothing is stored when a check fails.
 */
import { createServer } from 'node:http';
import { chown, stat, unlink } from 'node:fs/promises';
import { dirname } from 'node:path';
import { createInterface } from 'node:readline';
import type { AddressInfo } from 'node:net';
import { auth, extractWWWAuthenticateParams } from '@modelcontextprotocol/sdk/client/auth.js';
import type { McpServerConfig } from '../config/schema.js';
import { messageOf } from '../errors.js';
import type { Logger } from '../log.js';
import { connect } from '../toolhost/mcp/client.js';
import { discover, sameIssuer } from '../toolhost/mcp/auth/discovery.js';
import { brief, SignInError } from '../toolhost/mcp/auth/errors.js';
import { boundedFetch } from '../toolhost/mcp/auth/fetch.js';
import { httpAuth } from '../toolhost/mcp/auth/http.js';
import { StoredOAuthProvider } from '../toolhost/mcp/auth/provider.js';
import { authStore } from '../toolhost/mcp/auth/store.js';

/** How long a sign-in waits for the redirect (ms): a person finding a browser and a password. */
const WAIT_MS = 10 * 60_000;

export interface LoginOptions {
  name: string;
  server: McpServerConfig;
  stateDir: string;
  log: Logger;
  /** Each discovery, registration and token request (ms). */
  timeoutMs: number;
  /** --no-browser: the browser is on another machine; say the redirect will be pasted. */
  noBrowser: boolean;
  /** A line for the person (stdout). */
  say: (line: string) => void;
  input: NodeJS.ReadableStream;
}

/** Sign in; resolves with what to report, throws a SignInError saying what failed. */
export async function login(o: LoginOptions): Promise<string> {
  const { name, server } = o;
  if (server.url === undefined) throw new SignInError('config', `${name} is a stdio server; sign-in is for HTTP servers`);
  if (Object.keys(server.headers ?? {}).some((h) => h.toLowerCase() === 'authorization')) {
    throw new SignInError('config', `${name} has an Authorization header in its config; remove it to sign in with OAuth`);
  }
  const serverUrl = new URL(server.url);
  const fetchFn = boundedFetch(o.timeoutMs);

  if (server.oauth?.grant === 'client_credentials') {
    const client = httpAuth(name, server, { stateDir: o.stateDir, log: o.log, timeoutMs: o.timeoutMs });
    if (client === undefined) throw new SignInError('config', `${name} cannot sign in`);
    await discover(serverUrl, { fetchFn, issuer: server.oauth.issuer, grant: 'client_credentials' });
    await auth(client.authProvider, { serverUrl, fetchFn });
    return await check(o, `${name}: signed in with client credentials`);
  }

  // The server's challenge: its resource metadata hint and the scope it asks for.
  const probe = await fetchFn(serverUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'ping' }),
  });
  const challenge = probe.status === 401 || probe.status === 403 ? extractWWWAuthenticateParams(probe) : {};
  if (probe.status !== 401 && probe.status !== 403 && probe.ok) return `${name}: the server answers without a sign-in; nothing to do`;
  const discovery = await discover(serverUrl, { fetchFn, resourceMetadataUrl: challenge.resourceMetadataUrl, issuer: server.oauth?.issuer, grant: 'authorization_code' }).catch((error: unknown) => {
    throw error instanceof SignInError && error.code === 'no_sign_in' ? new SignInError('no_sign_in', `${name} asks for credentials but ${error.message}; it cannot be signed in to`) : error;
  });

  // Only this sign-in's redirect counts: any local process can call the listener, and one with
  // another state is answered and ignored (it neither ends the sign-in nor prints a word).
  let expectedState: string | undefined;
  const ours = (url: URL): boolean => expectedState !== undefined && url.searchParams.get('state') === expectedState;
  const redirect = await listen(server.oauth?.redirect_port ?? 0, ours);
  try {
    let shown = false;
    const store = authStore(o.stateDir, name, o.log);
    const provider = new StoredOAuthProvider({
      name, config: server, store, fetchFn, log: o.log,
      interactive: {
        redirectUrl: redirect.url,
        onAuthorizationUrl: (url) => {
          shown = true;
          expectedState = provider.expectedState;
          o.say(`To sign in to ${name}, open this address in a browser:`);
          o.say(url.href);
          o.say(o.noBrowser
            ? 'Then paste here the address the browser ends on (it may show an error page; copy its address bar) and press Enter.'
            : `Waiting for the browser at ${redirect.url} (or paste the address the browser ends on here and press Enter).`);
        },
      },
    });
    const { result: scope } = await store.update((current) => {
      const next = { ...current, version: 1 as const, discovery, redirect_url: redirect.url };
      const wanted = [...new Set([challenge.scope, next.scope_needed, next.tokens?.scope].flatMap((s) => s?.split(' ') ?? []).filter((s) => s !== ''))];
      // A registration for another redirect or fewer scopes would be refused: register again.
      const client = next.client as { redirect_uris?: string[]; scope?: string } | undefined;
      const fits = client?.redirect_uris?.includes(redirect.url) === true && (client.scope === undefined || wanted.every((s) => client.scope?.split(' ').includes(s)));
      if (!fits && server.oauth?.client_id === undefined && server.oauth?.client_metadata_url === undefined) delete next.client;
      return { value: next, result: wanted.join(' ') };
    });
    const options = { serverUrl, fetchFn, ...(scope === '' ? {} : { scope }), ...(challenge.resourceMetadataUrl === undefined ? {} : { resourceMetadataUrl: challenge.resourceMetadataUrl }) };
    const registered = (await provider.clientInformation()) !== undefined;
    const started = await auth(provider, options).catch(async (error: unknown) => {
      // No client before, none after: registering IRIS was refused or is not offered.
      if (!registered && (await provider.clientInformation()) === undefined && !(error instanceof SignInError)) throw registrationRefused(name, error);
      throw error;
    });
    if (started !== 'REDIRECT' || !shown) throw new SignInError('refused', `${name}: the authorization server did not start a sign-in`);

    const typed = pasted(o.input, ours);
    const answer = await Promise.race([redirect.next, typed.next, timeout()]).finally(() => typed.close());
    const params = answer.searchParams;
    // Checked again here (listen() and pasted() let only this sign-in's state through): a
    // redirect that is not this sign-in's gets no say, not even its error text on the terminal.
    if (!ours(answer)) {
      throw new SignInError('state', 'the redirect does not belong to this sign-in (its state does not match); nothing was stored. Start iris mcp login again and use the newest address');
    }
    const error = params.get('error');
    if (error !== null) throw new SignInError('refused', `the authorization server refused the sign-in: ${brief(error)}${params.get('error_description') ? ` (${brief(params.get('error_description'))})` : ''}`);
    const issuer = discovery.authorizationServerMetadata?.issuer ?? discovery.authorizationServerUrl;
    const iss = params.get('iss');
    if (iss !== null ? !sameIssuer(iss, issuer) : (discovery.authorizationServerMetadata as { authorization_response_iss_parameter_supported?: unknown } | undefined)?.authorization_response_iss_parameter_supported === true) {
      throw new SignInError('iss', `the redirect names ${iss === null ? 'no issuer' : `the issuer ${brief(iss)}`}, not ${issuer} (RFC 9207: a mix-up attack or a misconfigured server); nothing was stored`);
    }
    const code = params.get('code');
    if (code === null || code === '') throw new SignInError('refused', 'the redirect carries no authorization code');
    const done = await auth(provider, { ...options, authorizationCode: code });
    if (done !== 'AUTHORIZED') throw new SignInError('refused', `${name}: the authorization server did not give IRIS a token`);
    return await check(o, `${name}: signed in at ${issuer}`);
  } finally {
    await redirect.close();
    await ownedLikeStateDir(o.stateDir, authStore(o.stateDir, name, o.log).path);
  }
}

/**
 * Run as root (sudo iris mcp login), the files are root's: give them to the state dir's owner
 * (the iris user the daemon runs as), or the daemon could not read its tokens.
 */
async function ownedLikeStateDir(stateDir: string, path: string): Promise<void> {
  if (process.getuid?.() !== 0) return;
  const owner = await stat(stateDir).catch(() => undefined);
  if (owner === undefined || owner.uid === 0) return;
  for (const p of [dirname(path), path]) await chown(p, owner.uid, owner.gid).catch(() => undefined);
}

/** Remove a server's stored sign-in (tokens and registration). */
export async function logout(name: string, stateDir: string, log: Logger): Promise<boolean> {
  const path = authStore(stateDir, name, log).path;
  try {
    await unlink(path);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw error;
  }
}

/** Connect with the new token and list the tools: what a person wants to know worked. */
async function check(o: LoginOptions, signedIn: string): Promise<string> {
  const connection = await connect({
    name: o.name, config: o.server, timeoutMs: o.timeoutMs, log: o.log, onClose: () => undefined, onToolsChanged: () => undefined,
    onQuestion: () => Promise.resolve({ action: 'decline' }), // only the tools are listed: nobody to ask
    auth: httpAuth(o.name, o.server, { stateDir: o.stateDir, log: o.log, timeoutMs: o.timeoutMs }),
  });
  try {
    const tools = await connection.listTools();
    return `${signedIn}; ${tools.length} tools`;
  } finally {
    await connection.close().catch(() => undefined);
  }
}

/** DCR refused or impossible: say what to configure instead. */
function registrationRefused(name: string, error: unknown): SignInError {
  const text = messageOf(error).split('\n')[0] ?? '';
  return new SignInError('refused', `${name}: the authorization server does not let IRIS register itself (${text}); ask its administrator for a client and set [mcp.servers.${name}.oauth] client_id (and client_secret)`);
}

function timeout(): Promise<never> {
  return new Promise((_resolve, reject) => {
    setTimeout(() => reject(new SignInError('refused', `no sign-in within ${WAIT_MS / 60_000} minutes`)), WAIT_MS).unref();
  });
}

/**
 * The first pasted line that is an address (or its query) of this sign-in (`ours`): the
 * redirect the browser ended on. Another sign-in's address is refused, and the wait goes on.
 */
function pasted(input: NodeJS.ReadableStream, ours: (url: URL) => boolean): { next: Promise<URL>; close: () => void } {
  const lines = createInterface({ input, terminal: false });
  const next = new Promise<URL>((resolve) => {
    lines.on('line', (line) => {
      const text = line.trim();
      if (text === '') return;
      let url: URL;
      try {
        url = new URL(text.includes('://') ? text : `http://127.0.0.1/callback?${text.replace(/^\?/, '')}`);
      } catch {
        process.stderr.write('that is not an address; paste the whole address from the browser\n');
        return;
      }
      if (ours(url)) resolve(url);
      else process.stderr.write('that address is not from this sign-in (its state does not match); paste the address the newest sign-in ended on\n');
    });
  });
  return { next, close: () => lines.close() };
}

/** A one-shot loopback listener for the redirect: the first of this sign-in (`ours`); others are turned away. */
async function listen(port: number, ours: (url: URL) => boolean): Promise<{ url: string; next: Promise<URL>; close: () => Promise<void> }> {
  let arrived!: (url: URL) => void;
  const next = new Promise<URL>((resolve) => (arrived = resolve));
  const server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://127.0.0.1');
    if (request.method !== 'GET' || url.pathname !== '/callback') {
      response.writeHead(404).end();
      return;
    }
    if (!ours(url)) {
      response.writeHead(400, { 'content-type': 'text/plain; charset=utf-8' }).end('This is not the sign-in IRIS is waiting for (its state does not match).\n');
      return;
    }
    response.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' }).end('IRIS received the sign-in. You can close this window and return to the terminal.\n');
    arrived(url);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error) => reject(new SignInError('config', `cannot listen on 127.0.0.1:${port} for the redirect (${messageOf(error)})`)));
    server.listen(port, '127.0.0.1', () => resolve());
  });
  const { port: bound } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${bound}/callback`,
    next,
    close: () => new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
