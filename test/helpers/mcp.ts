import { spawn, type ChildProcess } from 'node:child_process';
import { connect } from 'node:net';
import { fileURLToPath } from 'node:url';
import { parseConfig } from '../../src/config/load.js';
import { assemble, type Iris } from '../../src/daemon/assemble.js';
import { createLogger } from '../../src/log.js';
import { closedPort } from './net.js';
import { tempDir } from './tmp.js';

const modules = (path: string) => fileURLToPath(new URL(`../../node_modules/${path}`, import.meta.url));
export const EVERYTHING = modules('@modelcontextprotocol/server-everything/dist/index.js');
export const FILESYSTEM = modules('@modelcontextprotocol/server-filesystem/dist/index.js');
export const MEMORY = modules('@modelcontextprotocol/server-memory/dist/index.js');
export const FAKE = fileURLToPath(new URL('../fixtures/fake-mcp-server.ts', import.meta.url));

export interface ServerSpec {
  command?: string;
  args?: string[];
  env?: Record<string, string>;
  url?: string;
  transport?: 'streamable-http' | 'sse';
  enabled?: boolean;
  allow?: string[];
  deny?: string[];
  confirm?: 'destructive' | 'always' | 'never';
  timeout_s?: number;
}

/** `[mcp.servers.NAME]` tables for a config file. */
export function serversToml(servers: Record<string, ServerSpec>): string {
  const value = (v: unknown): string =>
    typeof v === 'object' && v !== null && !Array.isArray(v)
      ? `{ ${Object.entries(v).map(([k, x]) => `${k} = ${JSON.stringify(x)}`).join(', ')} }`
      : JSON.stringify(v);
  return Object.entries(servers)
    .map(([name, spec]) => `[mcp.servers.${name}]\n${Object.entries(spec).map(([k, v]) => `${k} = ${value(v)}`).join('\n')}\n`)
    .join('\n');
}

export const stdio = (script: string, ...args: string[]): ServerSpec => ({ command: process.execPath, args: [script, ...args] });
export const fake = (mode: string): ServerSpec => ({ command: process.execPath, args: ['--import', 'tsx', FAKE, mode] });

export interface McpSetup {
  iris: Iris;
  logs: string[];
  stateDir: string;
  configText: string;
}

/** IRIS assembled with these MCP servers (not started: servers connect on first use). */
export function withServers(servers: Record<string, ServerSpec>, extra = '', stateDir = tempDir(), backoffMs = 50): McpSetup {
  const logs: string[] = [];
  const log = createLogger('test', { level: 'debug', write: (line) => logs.push(line), journald: false });
  const configText = `${extra}\n[assistant]\ntimezone = "UTC"\n${serversToml(servers)}`;
  const iris = assemble(parseConfig(configText, 'test-config'), { stateDir, log, mcpBackoffMs: backoffMs });
  return { iris, logs, stateDir, configText };
}

/** server-everything over HTTP (`streamableHttp` or `sse`) on a free loopback port. */
export async function everythingOverHttp(mode: 'streamableHttp' | 'sse'): Promise<{ url: string; child: ChildProcess; stop: () => Promise<void> }> {
  const port = await closedPort();
  // server-everything's HTTP modes use the global `crypto`, which Node 18 has only behind a flag.
  const flags = process.versions.node.startsWith('18.') ? ['--experimental-global-webcrypto'] : [];
  const child = spawn(process.execPath, [...flags, EVERYTHING, mode], { env: { ...process.env, PORT: String(port) }, stdio: 'ignore' });
  await waitForPort(port);
  const url = `http://127.0.0.1:${port}/${mode === 'sse' ? 'sse' : 'mcp'}`;
  const stop = async (): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  };
  return { url, child, stop };
}

/** Resolve once something accepts connections on the port (servers need 1–2 s to start). */
export async function waitForPort(port: number, deadlineMs = 15_000): Promise<void> {
  const until = Date.now() + deadlineMs;
  for (;;) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    if (Date.now() > until) throw new Error(`nothing listens on ${port}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
