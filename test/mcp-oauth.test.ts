// OAuth sign-in to MCP servers (issue 14): a real authorization server (oidc-provider) and an
// MCP server behind the SDK's bearer auth, both on loopback; the real `iris` executable signs
// in (loopback redirect, and pasted address), calls tools with the token, refreshes, and
// says "needs sign-in" when the grant is revoked. Hostile or missing metadata is refused
// with a clear line and nothing stored; tokens never reach a log or an output.
import type { ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { iris, startIris, waitForLine, type Run } from './helpers/cli.js';
import { closedPort } from './helpers/net.js';
import { tempDir } from './helpers/tmp.js';
import {
  browse, DEVICE, enterCode, MACHINE, PRE_REGISTERED, revokeAccessToken, revokeGrant, startAuthServer, startMcpResource, startStaticServer,
  type AuthServer, type McpResource,
} from './fixtures/oauth-servers.js';

interface Doc {
  tokens?: { access_token: string; refresh_token?: string; issuer?: string; scope?: string };
  client?: { client_id: string; issuer?: string };
  expires_at?: number;
  lifetime_ms?: number;
  scope_needed?: string;
}

let as: AuthServer;
let calendar: McpResource;
let locked: AuthServer;
let lockedCalendar: McpResource;
/** The pre-registered client's exact redirect port. */
let redirectPort: number;
/** Every token IRIS was given: none may appear in what any command printed. */
const tokens = new Set<string>();
/** Everything any `iris` printed: searched for token strings at the end. */
const seen: string[] = [];

beforeAll(async () => {
  redirectPort = await closedPort();
  as = await startAuthServer({ redirectUris: [`http://127.0.0.1:${redirectPort}/callback`] });
  calendar = await startMcpResource(as.issuer);
  locked = await startAuthServer({ registration: 'locked' });
  lockedCalendar = await startMcpResource(locked.issuer);
});
afterAll(async () => {
  await Promise.all([calendar.stop(), as.stop(), lockedCalendar.stop(), locked.stop()]);
});

/** connect_timeout_s 5: a sign-in's 401 → refresh → 401 round trips all happen inside the
 * connect, and 2 s was missed once with the whole suite running on 2 cores. */
function setup(servers: string, extra = '') {
  const dir = tempDir();
  writeFileSync(join(dir, 'config'), `[assistant]\ntimezone = "UTC"\n[mcp]\nconnect_timeout_s = 5\n${extra}\n${servers}`);
  const vars = { IRIS_CONFIG: join(dir, 'config'), IRIS_STATE_DIR: join(dir, 'state'), IRIS_SOCKET: join(dir, 'control.sock') };
  const doc = (name: string): Doc | undefined => {
    const path = join(vars.IRIS_STATE_DIR, 'mcp-auth', `${name}.json`);
    const stored = existsSync(path) ? (JSON.parse(readFileSync(path, 'utf8')) as Doc) : undefined;
    for (const t of [stored?.tokens?.access_token, stored?.tokens?.refresh_token]) if (t !== undefined) tokens.add(t);
    return stored;
  };
  const run = async (args: string[]): Promise<Run> => {
    const result = await iris(args, vars);
    seen.push(result.stdout, result.stderr);
    return result;
  };
  return { dir, vars, doc, run };
}

const server = (name: string, url: string, oauth = ''): string => `[mcp.servers.${name}]\nurl = "${url}"\n${oauth === '' ? '' : `[mcp.servers.${name}.oauth]\n${oauth}\n`}`;

/** A running daemon for `work`; its log is kept (searched for tokens at the end), and it is stopped after. */
async function withDaemon(vars: Record<string, string>, work: (daemon: ChildProcess, log: () => string) => Promise<void>): Promise<void> {
  const daemon = startIris(['daemon'], vars);
  let daemonLog = '';
  daemon.stderr?.on('data', (chunk: Buffer) => (daemonLog += chunk.toString()));
  try {
    await work(daemon, () => daemonLog);
  } finally {
    const stopped = new Promise((resolve) => daemon.once('exit', resolve));
    daemon.kill('SIGTERM');
    await stopped;
    seen.push(daemonLog);
  }
}

/** Start `iris mcp login NAME`; resolves with the child and the authorization URL it printed. */
async function startLogin(vars: Record<string, string>, args: string[], issuer = as.issuer): Promise<{ child: ChildProcess; url: string; done: Promise<Run> }> {
  const child = startIris(['mcp', 'login', ...args], vars, true);
  let stdout = '';
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const done = new Promise<Run>((resolve) => child.on('close', (code) => {
    seen.push(stdout, stderr);
    resolve({ code, stdout, stderr });
  }));
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      const line = stdout.split('\n').find((l) => l.startsWith(`${issuer}/auth?`));
      if (line !== undefined) resolve(line);
    });
    void done.then((r) => reject(new Error(`login ended (${r.code}) before printing a URL: ${r.stdout}${r.stderr}`)));
  });
  return { child, url, done };
}

const SENTENCE = 'The calendar tools need you to sign in again: run iris mcp login calendar';

describe('iris mcp login', () => {
  it('signs in on the loopback redirect with dynamic registration; a running daemon reconnects and the tools work', async () => {
    const { vars, doc, run } = setup(server('calendar', calendar.url));
    await withDaemon(vars, async (daemon, log) => {
      const waiting = waitForLine(daemon, /calendar: needs sign-in/);
      await waitForLine(daemon, /ready:/);
      await waiting;
      expect((await run(['mcp', 'list'])).stdout).toBe(`calendar: needs sign-in, 0 tools, unknown (${SENTENCE})\n`);
      expect(await run(['tools', 'call', 'calendar.whoami'])).toMatchObject({ code: 1, stdout: `${SENTENCE}\n` });

      const login = await startLogin(vars, ['calendar']);
      const redirect = await browse(login.url);
      expect(new URL(redirect).searchParams.get('iss')).toBe(as.issuer);
      expect((await fetch(redirect)).status).toBe(200); // the browser reaches the loopback listener
      const result = await login.done;
      expect(result).toMatchObject({ code: 0, stderr: '' });
      expect(result.stdout).toContain(`calendar: signed in at ${as.issuer}; 2 tools\n`);
      expect(result.stdout).toContain('the running IRIS reconnected it: calendar: up over streamable-http, 2 tools');
      expect(await run(['tools', 'call', 'calendar.whoami'])).toMatchObject({ code: 0, stdout: 'signed in as alice with calendar.read\n' });

      const stored = doc('calendar');
      expect(stored?.tokens?.issuer).toBe(as.issuer); // keyed by issuer: the SDK stamps it
      expect(stored?.client?.issuer).toBe(as.issuer);
      expect(stored?.client?.client_id).not.toBe(PRE_REGISTERED.client_id); // registered dynamically
      expect(statSync(join(vars.IRIS_STATE_DIR, 'mcp-auth', 'calendar.json')).mode & 0o777).toBe(0o600);
      expect(log().match(/calendar: needs sign-in/g)).toHaveLength(1);
      seen.push((await run(['status', '--json'])).stdout);

      // Signed out: the daemon hears of it, and the tools say how to sign in again.
      expect(await run(['mcp', 'logout', 'calendar'])).toMatchObject({
        code: 0, stdout: `calendar: signed out; its tokens and registration are deleted\nthe running IRIS reconnected it: calendar: needs sign-in, 2 tools, unhealthy (${SENTENCE})\n`,
      });
      expect(doc('calendar')).toBeUndefined();
      expect((await run(['status'])).stdout).toContain(`MCP calendar: needs sign-in, 2 tools`);
      expect(await run(['tools', 'call', 'calendar.whoami'])).toMatchObject({ code: 1, stdout: `${SENTENCE}\n` });
    });
  }, 30_000);

  it('signs in with a pre-registered client and a pasted address; refreshes before expiry and when the token is refused; a revoked grant means sign in again', async () => {
    const { vars, doc, run } = setup(server('calendar', calendar.url, `client_id = "${PRE_REGISTERED.client_id}"\nclient_secret = "${PRE_REGISTERED.client_secret}"\nredirect_port = ${redirectPort}`));
    const login = await startLogin(vars, ['calendar', '--no-browser']);
    const asked = new URL(login.url).searchParams;
    expect(Object.fromEntries(asked)).toMatchObject({
      client_id: PRE_REGISTERED.client_id, redirect_uri: `http://127.0.0.1:${redirectPort}/callback`, response_type: 'code',
      code_challenge_method: 'S256', resource: calendar.url, scope: 'calendar.read', state: expect.stringMatching(/^[\w-]{43}$/),
    });
    login.child.stdin?.write(`${await browse(login.url)}\n`); // pasted: the browser is elsewhere
    const result = await login.done;
    expect(result).toMatchObject({ code: 0, stderr: '' });
    expect(result.stdout).toMatch(/^To sign in to calendar, open this address in a browser:\nhttp:\/\/127\.0\.0\.1:\d+\/auth\?.*\nThen paste here the address the browser ends on/);
    expect(result.stdout).toContain(`calendar: signed in at ${as.issuer}; 2 tools\n`);
    const first = doc('calendar');
    expect(first?.client).toBeUndefined(); // the configured client is used, not stored
    expect(first?.tokens?.refresh_token).toBeDefined();
    expect(await run(['tools', 'call', 'calendar.whoami'])).toMatchObject({ code: 0, stdout: 'signed in as alice with calendar.read\n' });

    // Near its expiry, the access token is refreshed before it is used: the server never refuses it.
    const path = join(vars.IRIS_STATE_DIR, 'mcp-auth', 'calendar.json');
    writeFileSync(path, JSON.stringify({ ...first, expires_at: Date.now() + 1_000 }));
    const refusedBefore = calendar.unauthorized;
    expect(await run(['tools', 'call', 'calendar.whoami', '--log-level', 'info'])).toMatchObject({ code: 0, stdout: 'signed in as alice with calendar.read\n' });
    const second = doc('calendar');
    expect(second?.tokens?.access_token).not.toBe(first?.tokens?.access_token);
    expect(second?.expires_at).toBeGreaterThan(Date.now() + 3_000_000);
    expect(calendar.unauthorized).toBe(refusedBefore);

    // The server stops taking the access token (as when it expires there): one 401, a refresh, the call goes through.
    await revokeAccessToken(as, second?.tokens?.access_token ?? '');
    expect(await run(['tools', 'call', 'calendar.whoami', '--log-level', 'debug'])).toMatchObject({ code: 0, stdout: 'signed in as alice with calendar.read\n' });
    const third = doc('calendar');
    expect(third?.tokens?.access_token).not.toBe(second?.tokens?.access_token);
    expect(calendar.unauthorized).toBe(refusedBefore + 1);

    // The person revokes IRIS's access: the tools say how to sign in again, and so does the list.
    await revokeGrant(as, third?.tokens?.access_token ?? '');
    expect(await run(['tools', 'call', 'calendar.whoami'])).toMatchObject({ code: 1, stdout: `${SENTENCE}\n` });
    expect(doc('calendar')?.tokens).toBeUndefined();
    expect((await run(['mcp', 'list'])).stdout).toMatch(/^calendar: needs sign-in/);
    expect(JSON.parse((await run(['mcp', 'list', '--json'])).stdout)).toEqual([expect.objectContaining({ name: 'calendar', state: 'needs-sign-in', reason: SENTENCE })]);
    const health = await run(['mcp', 'health']);
    expect(health).toMatchObject({ code: 1, stdout: `calendar: needs sign-in (${SENTENCE})\n` });
  }, 30_000);

  it('ignores a redirect with a wrong state, on the listener or pasted, and goes on waiting for its own', async () => {
    const { vars, doc } = setup(server('calendar', calendar.url));
    const login = await startLogin(vars, ['calendar']);
    const redirect = new URL(await browse(login.url));
    const forged = new URL(redirect);
    forged.searchParams.set('state', 'forged');
    forged.searchParams.set('error', 'access_denied');
    forged.searchParams.set('error_description', '\u001b[2J\u001b]0;pwned\u0007');
    // Any local process can call the listener: it is turned away, and the sign-in is not ended.
    const turnedAway = await fetch(forged);
    expect(turnedAway.status).toBe(400);
    expect(await turnedAway.text()).toMatch(/not the sign-in IRIS is waiting for/);
    login.child.stdin?.write(`${forged.href}\n`); // a pasted one too
    await expect.poll(() => login.child.exitCode === null && doc('calendar')?.tokens === undefined).toBe(true);
    expect((await fetch(redirect)).status).toBe(200); // then its own redirect
    const result = await login.done;
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`calendar: signed in at ${as.issuer}; 2 tools\n`);
    expect(result.stderr).toBe('that address is not from this sign-in (its state does not match); paste the address the newest sign-in ended on\n');
    expect(doc('calendar')?.tokens).toBeDefined();
  }, 30_000);

  it('refuses a redirect with a wrong iss or none, and stores no token', async () => {
    for (const [param, value, error] of [
      ['iss', 'http://127.0.0.1:1', /names the issuer http:\/\/127\.0\.0\.1:1, not http:\/\/127\.0\.0\.1:\d+ \(RFC 9207/],
      ['iss', null, /names no issuer, not http:\/\/127\.0\.0\.1:\d+ \(RFC 9207/], // the server says it always sends one
    ] as const) {
      const { vars, doc } = setup(server('calendar', calendar.url));
      const login = await startLogin(vars, ['calendar']);
      const redirect = new URL(await browse(login.url));
      if (value === null) redirect.searchParams.delete(param);
      else redirect.searchParams.set(param, value);
      login.child.stdin?.write(`${redirect.href}\n`);
      const result = await login.done;
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(new RegExp(`^calendar: sign-in failed: .*${error.source}.*\\n$`));
      expect(doc('calendar')?.tokens).toBeUndefined();
    }
  }, 30_000);

  it('steps up: a tool that needs more scope asks for a new sign-in, which asks for that scope', async () => {
    const { vars, doc, run } = setup(server('calendar', calendar.url));
    const signIn = async (): Promise<URL> => {
      const login = await startLogin(vars, ['calendar']);
      login.child.stdin?.write(`${await browse(login.url)}\n`);
      const done = await login.done;
      expect(done.stderr).toBe("");
      expect(done.code).toBe(0);
      return new URL(login.url);
    };
    expect((await signIn()).searchParams.get('scope')).toBe('calendar.read');
    expect(await run(['tools', 'call', 'calendar.add_event'])).toMatchObject({ code: 1, stdout: `${SENTENCE}\n` });
    expect(doc('calendar')?.scope_needed).toBe('calendar.read calendar.write');
    expect((await signIn()).searchParams.get('scope')).toBe('calendar.read calendar.write');
    expect(await run(['tools', 'call', 'calendar.add_event'])).toMatchObject({ code: 0, stdout: 'event added\n' });
    expect(doc('calendar')?.scope_needed).toBeUndefined();
  }, 60_000); // two sign-ins and two calls, six CLI processes: 30 s was missed once on a loaded machine

  // oidc-provider 9, the first with client ID metadata documents, needs Node 20.
  it.skipIf(Number(process.versions.node.split('.')[0]) < 20)('uses a client ID metadata document before registering, where the authorization server supports them', async () => {
    const documentUrl = 'https://iris.example.org/oauth/client.json';
    const port = await closedPort();
    const redirect = `http://127.0.0.1:${port}/callback`;
    const cimdAs = await startAuthServer({
      clientDocuments: {
        [documentUrl]: {
          client_id: documentUrl, client_name: 'IRIS', redirect_uris: [redirect], grant_types: ['authorization_code', 'refresh_token'],
          response_types: ['code'], token_endpoint_auth_method: 'none', application_type: 'native',
        },
      },
    });
    const cimdCalendar = await startMcpResource(cimdAs.issuer);
    try {
      const { vars, doc, run } = setup(server('calendar', cimdCalendar.url, `client_metadata_url = "${documentUrl}"\nredirect_port = ${port}`));
      const login = await startLogin(vars, ['calendar'], cimdAs.issuer);
      expect(new URL(login.url).searchParams.get('client_id')).toBe(documentUrl);
      expect((await fetch(await browse(login.url))).status).toBe(200);
      expect((await login.done).code).toBe(0);
      expect(doc('calendar')?.client).toEqual({ client_id: documentUrl, issuer: cimdAs.issuer });
      expect(await run(['tools', 'call', 'calendar.whoami'])).toMatchObject({ code: 0, stdout: 'signed in as alice with calendar.read\n' });
    } finally {
      await Promise.all([cimdCalendar.stop(), cimdAs.stop()]);
    }
  }, 30_000);

  it('signs in by voice where the authorization server offers a code to enter (RFC 8628): the daemon says where, polls, and reconnects', async () => {
    const { vars, doc, run } = setup(server('calendar', calendar.url, `client_id = "${DEVICE.client_id}"\nissuer = "${as.issuer}"`));
    await withDaemon(vars, async (daemon, log) => {
      await waitForLine(daemon, /ready:/);
      const asked = await run(['tools', 'call', 'calendar.whoami']);
      const spoken = /^To sign in to calendar, go to (http:\/\/127\.0\.0\.1:\d+\/device) and enter the code ([B-Z]{4}-[B-Z]{4})\.\n$/.exec(asked.stdout);
      expect(asked.code).toBe(1);
      expect(spoken, `${asked.stdout}${asked.stderr}${log()}`).not.toBeNull();
      expect((await run(['tools', 'call', 'calendar.whoami'])).stdout).toBe(asked.stdout); // the same code until it is used
      const up = waitForLine(daemon, /calendar: up over streamable-http/);
      expect(await enterCode(spoken?.[1] ?? '', spoken?.[2] ?? '')).toMatch(/Sign-in Success/);
      await up;
      expect(log()).toMatch(/calendar: signed in by code/);
      expect(await run(['tools', 'call', 'calendar.whoami'])).toMatchObject({ code: 0, stdout: 'signed in as alice with calendar.read\n' });
      expect(doc('calendar')?.tokens?.issuer).toBe(as.issuer);
    });
  }, 30_000);

  it('signs in with the client-credentials grant, without a person', async () => {
    const { run } = setup(server('machine', calendar.url, `grant = "client_credentials"\nclient_id = "${MACHINE.client_id}"\nclient_secret = "${MACHINE.client_secret}"\nissuer = "${as.issuer}"\nscope = "calendar.read"`));
    expect(await run(['tools', 'call', 'machine.whoami'])).toMatchObject({ code: 0, stdout: `signed in as ${MACHINE.client_id} with calendar.read\n` });
    expect(await run(['mcp', 'login', 'machine'])).toMatchObject({ code: 0, stdout: 'machine: signed in with client credentials; 2 tools\n' });
  }, 30_000);
});

describe('sign-in that cannot work', () => {
  it('refuses hostile or missing metadata and a refused registration with one clear line, storing nothing', async () => {
    const meta = (issuer: string, extra: Record<string, unknown> = {}) => ({
      issuer, authorization_endpoint: `${issuer}/auth`, token_endpoint: `${issuer}/token`, registration_endpoint: `${issuer}/reg`,
      response_types_supported: ['code'], code_challenge_methods_supported: ['S256'], ...extra,
    });
    const hostile = await startStaticServer((origin) => {
      const routes: Record<string, unknown> = {};
      const add = (name: string, metadata: unknown) => {
        routes[`/${name}/mcp`] = 'html-401';
        routes[`/.well-known/oauth-protected-resource/${name}/mcp`] = { resource: `${origin}/${name}/mcp`, authorization_servers: [`${origin}/${name}`] };
        routes[`/.well-known/oauth-authorization-server/${name}`] = metadata;
      };
      add('nopkce', { ...meta(`${origin}/nopkce`), code_challenge_methods_supported: undefined });
      add('wrongissuer', meta(`${origin}/someone-else`));
      add('plainhttp', meta(`${origin}/plainhttp`, { token_endpoint: 'http://as.example.com/token' }));
      add('huge', 'huge');
      add('slow', 'slow');
      // A registration refused with terminal escape codes in the error (clear the screen, retitle the window).
      add('escapes', meta(`${origin}/escapes`));
      routes['/escapes/reg'] = { status: 400, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ error: 'invalid_client_metadata', error_description: '\u001b[2J\u001b]0;pwned\u0007no' }) };
      routes['/nometa/mcp'] = 'html-401';
      return routes;
    });
    try {
      const names = ['nopkce', 'wrongissuer', 'plainhttp', 'huge', 'slow', 'escapes', 'nometa'];
      const { run, doc } = setup([...names.map((n) => server(n, `${hostile.origin}/${n}/mcp`)), server('locked', lockedCalendar.url)].join('\n'));
      const expected: Record<string, RegExp> = {
        nopkce: /does not advertise PKCE with S256 \(code_challenge_methods_supported\), which the MCP specification requires; refused$/,
        wrongissuer: /the metadata of http:\/\/127\.0\.0\.1:\d+\/wrongissuer names another issuer, http:\/\/127\.0\.0\.1:\d+\/someone-else; refused$/,
        plainhttp: /the token endpoint http:\/\/as\.example\.com\/token is not HTTPS; refused \(plain HTTP only on loopback\)$/,
        huge: /answered with more than 256 KiB; refused$/,
        slow: /did not answer within 5 s$/,
        escapes: /^escapes: sign-in failed: escapes: the authorization server does not let IRIS register itself \(.*\\x1b\[2J\\x1b\]0;pwned\\x07no.*\)/,
        nometa: /^nometa: sign-in failed: nometa asks for credentials but it publishes no OAuth metadata \(no protected-resource metadata, no authorization server metadata at http:\/\/127\.0\.0\.1:\d+\/\); it cannot be signed in to$/,
        locked: /^locked: sign-in failed: locked: the authorization server does not let IRIS register itself \(.*\); ask its administrator for a client and set \[mcp\.servers\.locked\.oauth\] client_id \(and client_secret\)$/,
      };
      for (const [name, error] of Object.entries(expected)) {
        const result = await run(['mcp', 'login', name]);
        expect(result.code, name).toBe(1);
        expect(result.stdout, name).toBe('');
        expect(result.stderr.split('\n'), name).toHaveLength(2); // one line
        expect(result.stderr.trim(), name).toMatch(error);
        expect(result.stderr, name).not.toMatch(/[\u0000-\u0009\u000b-\u001f]/); // nothing a terminal acts on
        expect(doc(name)?.tokens, name).toBeUndefined();
      }
      // A static Authorization header the server refuses: one line, no body, no restarts.
      const wrong = setup(`[mcp.servers.static]\nurl = "${calendar.url}"\nheaders = { Authorization = "Bearer not-a-token" }\n`);
      const refused = await wrong.run(['tools', 'call', 'static.whoami', '--log-level', 'info']);
      expect(refused.stdout).toMatch(/^The static tools are offline right now \(the server refused IRIS's credentials \(HTTP 401 Unauthorized\); check the Authorization header/);
      expect(refused.stderr.split('\n').filter((l) => l.includes('static'))).toEqual([expect.stringMatching(/static: the server refused IRIS's credentials \(HTTP 401 Unauthorized\)/)]);

      // The daemon side: a 401 with no way to sign in is one log line, no HTML, and the tools say why.
      const call = await run(['tools', 'call', 'nometa.anything', '--log-level', 'info']);
      expect(call.code).toBe(1);
      const lines = call.stderr.split('\n').filter((l) => l.includes('nometa'));
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(/nometa: the server asks for credentials \(HTTP 401\) but it publishes no OAuth metadata .*; set an Authorization header in \[mcp\.servers\.nometa\] headers/);
      expect(call.stdout + call.stderr).not.toMatch(/<html|<p>|Unauthorized\. Please/);
    } finally {
      await hostile.stop();
    }
  }, 40_000);

  it('never prints or logs a token', () => {
    expect(tokens.size).toBeGreaterThan(4);
    const everything = seen.join('\n');
    for (const token of tokens) expect(everything.includes(token)).toBe(false);
  });
});
