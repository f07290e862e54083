// The stored sign-in, without servers: what the daemon does with the tokens it holds.
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../src/config/load.js';
import { createLogger } from '../src/log.js';
import { authStore, StoredOAuthProvider } from '../src/toolhost/mcp/oauth.js';
import { tempDir } from './helpers/tmp.js';

describe('the stored sign-in', () => {
  it('never sends a refresh token to an authorization server other than the one that issued it', async () => {
    const logs: string[] = [];
    const log = createLogger('test', { level: 'debug', write: (line) => logs.push(line), journald: false });
    const config = parseConfig('[mcp.servers.calendar]\nurl = "https://mcp.example.org/mcp"\n[mcp.servers.calendar.oauth]\nclient_id = "iris"\nclient_secret = "s3cret"\n', 'test').mcp.servers.calendar!;
    const store = authStore(tempDir(), 'calendar', log);
    // `iris mcp login` stored a new discovery (another server) and gave up; the old tokens stayed.
    await store.update(() => ({
      value: {
        version: 1,
        discovery: { authorizationServerUrl: 'https://elsewhere.example.net', authorizationServerMetadata: { issuer: 'https://elsewhere.example.net', authorization_endpoint: 'https://elsewhere.example.net/auth', token_endpoint: 'https://elsewhere.example.net/token', response_types_supported: ['code'] } },
        tokens: { access_token: 'old-access', token_type: 'Bearer', refresh_token: 'old-refresh', issuer: 'https://auth.example.org' },
        expires_at: Date.now() - 1000,
        lifetime_ms: 3_600_000,
      },
      result: undefined,
    }));
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
