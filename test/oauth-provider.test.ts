// The stored sign-in, without servers: what the daemon does with the tokens it holds.
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../src/config/load.js';
import { createLogger } from '../src/log.js';
import { StoredOAuthProvider } from '../src/toolhost/mcp/auth/provider.js';
import { authStore } from '../src/toolhost/mcp/auth/store.js';
import { tempDir } from './helpers/tmp.js';

const AS = 'https://auth.example.org';
const METADATA = { issuer: AS, authorization_endpoint: `${AS}/auth`, token_endpoint: `${AS}/token`, response_types_supported: ['code'] };

function setup(discoveryAs = AS) {
  const logs: string[] = [];
  const log = createLogger('test', { level: 'debug', write: (line) => logs.push(line), journald: false });
  const config = parseConfig('[mcp.servers.calendar]\nurl = "https://mcp.example.org/mcp"\n[mcp.servers.calendar.oauth]\nclient_id = "iris"\nclient_secret = "s3cret"\n', 'test').mcp.servers.calendar!;
  const store = authStore(tempDir(), 'calendar', log);
  const stored = (refresh: string) => store.update(() => ({
    value: {
      version: 1 as const,
      discovery: { authorizationServerUrl: discoveryAs, authorizationServerMetadata: { ...METADATA, issuer: discoveryAs, token_endpoint: `${discoveryAs}/token` } },
      tokens: { access_token: `access-${refresh}`, token_type: 'Bearer', refresh_token: refresh, issuer: AS },
      expires_at: Date.now() - 1000,
      lifetime_ms: 3_600_000,
    },
    result: undefined,
  }));
  return { logs, log, config, store, stored };
}

describe('the stored sign-in', () => {
  it('a refused refresh token is dropped, unless another IRIS process has refreshed meanwhile', async () => {
    for (const raced of [false, true]) {
      const { log, config, store, stored } = setup();
      await stored('old-refresh');
      const fetchFn = async (): Promise<Response> => {
        if (raced) await stored('rotated'); // the CLI refreshed first: the old token is used up
        return new Response('{"error":"invalid_grant"}', { status: 400, headers: { 'content-type': 'application/json' } });
      };
      await new StoredOAuthProvider({ name: 'calendar', config, store, fetchFn, log }).tokens();
      expect((await store.read())?.tokens?.refresh_token, raced ? 'raced' : 'revoked').toBe(raced ? 'rotated' : undefined);
    }
  });

  it('never sends a refresh token to an authorization server other than the one that issued it', async () => {
    // `iris mcp login` stored a new discovery (another server) and gave up; the old tokens stayed.
    const { logs, log, config, store, stored } = setup('https://elsewhere.example.net');
    await stored('old-refresh');
    const sent: string[] = [];
    const fetchFn = (input: string | URL | Request): Promise<Response> => {
      sent.push(String(input instanceof Request ? input.url : input));
      return Promise.resolve(new Response('{"access_token":"new","token_type":"Bearer"}', { status: 200, headers: { 'content-type': 'application/json' } }));
    };
    const provider = new StoredOAuthProvider({ name: 'calendar', config, store, fetchFn, log });
    await provider.tokens();
    expect(sent).toEqual([]);
    expect(logs.join('\n')).toMatch(/calendar: the stored tokens are from another authorization server; not refreshed/);
    expect(logs.join('\n')).not.toMatch(/old-refresh|s3cret/);
  });
});
