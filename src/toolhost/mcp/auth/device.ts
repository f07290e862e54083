/**
 * A sign-in by voice: the OAuth device authorization grant (RFC 8628), which neither the MCP
 * specification nor the SDK has.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { OAuthTokensSchema } from '@modelcontextprotocol/sdk/shared/auth.js';
import type { McpServerConfig } from '../../../config/schema.js';
import { messageOf } from '../../../errors.js';
import { checkEndpoint, discover } from './discovery.js';
import { brief } from './errors.js';
import { boundedFetch } from './fetch.js';
import type { HttpAuthOptions } from './http.js';
import { StoredOAuthProvider } from './provider.js';
import { authStore } from './store.js';

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