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
  browse, MACHINE, PRE_REGISTERED, revokeAccessToken, revokeGrant, startAuthServer, startMcpResource, startStaticServer,
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
/** Everything any `iris` printed: searched for token strings at the end. */
const seen: string[] = [];

beforeAll(async () => {
  as = await startAuthServer();
  calendar = await startMcpResource(as.issuer);
});
afterAll(async () => {
  await calendar.stop();
  await as.stop();
});

function setup(servers: string, extra = '') {
  const dir = tempDir();
  writeFileSync(join(dir, 'config'), `[assistant]\ntimezone = "UTC"\n[mcp]\nconnect_timeout_s = 2\n${extra}\n${servers}`);
  const vars = { IRIS_CONFIG: join(dir, 'config'), IRIS_STATE_DIR: join(dir, 'state'), IRIS_SOCKET: join(dir, 'control.sock') };
  const doc = (name: string): Doc | undefined => {
    const path = join(vars.IRIS_STATE_DIR, 'mcp-auth', `${name}.json`);
    return existsSync(path) ? (JSON.parse(readFileSync(path, 'utf8')) as Doc) : undefined;
  };
  const run = async (args: string[]): Promise<Run> => {
    const result = await iris(args, vars);
    seen.push(result.stdout, result.stderr);
    return result;
  };
  return { dir, vars, doc, run };
}

const server = (name: string, url: string, oauth = ''): string => `[mcp.servers.${name}]\nurl = "${url}"\n${oauth === '' ? '' : `[mcp.servers.${name}.oauth]\n${oauth}\n`}`;

/** Start `iris mcp login NAME`; resolves with the child and the authorization URL it printed. */
async function startLogin(vars: Record<string, string>, args: string[]): Promise<{ child: ChildProcess; url: string; done: Promise<Run> }> {
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
      const line = stdout.split('\n').find((l) => l.startsWith(`${as.issuer}/auth?`));
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
    const daemon = startIris(['daemon'], vars);
    let daemonLog = '';
    daemon.stderr?.on('data', (chunk: Buffer) => (daemonLog += chunk.toString()));
    try {
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
      expect(daemonLog.match(/calendar: needs sign-in/g)).toHaveLength(1);
    } finally {
      const stopped = new Promise((resolve) => daemon.once('exit', resolve));
      daemon.kill('SIGTERM');
      await stopped;
      seen.push(daemonLog);
    }
  }, 30_000);
});
