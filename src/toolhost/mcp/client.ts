/**
 * One MCP server connection: the only file that imports `@modelcontextprotocol/sdk`. stdio,
 * Streamable HTTP, and SSE (configured, or as the fallback for servers that only speak it),
 * with a short connect timeout, per-call timeouts, the turn's signal for cancellation, full
 * tools/list pagination, list_changed, and fast failure when the server dies (in-flight calls
 * fail at once instead of waiting out their timeout). It declares elicitation (forms, and links,
 * which are only ever declined): a server's question goes to `onQuestion`.
 */
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { FetchLike, Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ElicitRequestSchema, ToolListChangedNotificationSchema, type ElicitResult } from '@modelcontextprotocol/sdk/types.js';
import type { McpServerConfig } from '../../config/schema.js';
import { messageOf } from '../../errors.js';
import type { Logger } from '../../log.js';
import type { AskPerson, CallToolResult, FormSchema, ToolDefinition, ToolQuestion } from '../api.js';
import { timerMs } from '../../timer.js';

/** A tool as a server lists it (annotations and execution hints kept). */
export interface RemoteTool extends ToolDefinition {
  execution?: { taskSupport?: string };
}

export interface McpConnection {
  /** The stdio child's PID (tests kill it), when there is one. */
  readonly pid: number | undefined;
  readonly transport: 'stdio' | 'streamable-http' | 'sse';
  listTools(signal?: AbortSignal): Promise<RemoteTool[]>;
  callTool(name: string, args: Record<string, unknown>, options: { signal?: AbortSignal; timeoutMs: number }): Promise<CallToolResult>;
  ping(timeoutMs: number): Promise<void>;
  close(): Promise<void>;
}

export interface ConnectOptions {
  name: string;
  config: McpServerConfig;
  /** Connect + initialize limit (ms): the SDK's own default is 60 s. */
  timeoutMs: number;
  log: Logger;
  /** The connection died (process exit, network failure); fired once. */
  onClose: (why: string) => void;
  onToolsChanged: () => void;
  /** OAuth for an HTTP server (auth/): the SDK signs requests and refreshes through it. */
  auth?: { authProvider: OAuthClientProvider; fetch: FetchLike } | undefined;
  /** The server asks the person something during a call (`elicitation/create`). */
  onQuestion: AskPerson;
}

const CLIENT_INFO = { name: 'iris', version: '0.1.0' };
/** Links are declared so that a server's link request reaches the person (said, then declined), not an error. */
const CAPABILITIES = { elicitation: { form: {}, url: {} } };
/** Errors after which an HTTP session is gone: close, so pending calls fail now. */
const FATAL = /ECONNREFUSED|ECONNRESET|fetch failed|SSE stream disconnected|Maximum reconnection attempts|other side closed|terminated/i;
/** How often an idle HTTP connection is pinged (ms): a dead server gives no other signal. */
const PING_EVERY_MS = 30_000;

export async function connect(options: ConnectOptions): Promise<McpConnection> {
  const { config, name, log } = options;
  if (config.command !== undefined) return open(options, stdioTransport(name, config, log), 'stdio');
  const url = new URL(config.url ?? '');
  const requestInit = { headers: { ...config.headers } };
  const auth = options.auth ?? {};
  if (config.transport === 'sse') return open(options, new SSEClientTransport(url, { requestInit, ...auth }), 'sse');
  try {
    return await open(options, new StreamableHTTPClientTransport(url, { requestInit, ...auth }), 'streamable-http');
  } catch (error) {
    // The spec's back-compat recipe: an old HTTP+SSE server refuses the POST with 4xx.
    const status = (error as { code?: unknown }).code;
    if (!(status === 400 || status === 404 || status === 405 || /\b40[045]\b|Cannot POST|Not Found|Method Not Allowed/i.test(messageOf(error)))) {
      throw error;
    }
    log.info(`${name}: no Streamable HTTP at ${url.href} (${briefly(error)}); trying SSE`);
    try {
      return await open(options, new SSEClientTransport(url, { requestInit, ...auth }), 'sse');
    } catch (sseError) {
      throw new Error(`Streamable HTTP: ${briefly(error)}; SSE: ${briefly(sseError)}`, { cause: sseError });
    }
  }
}

function stdioTransport(name: string, config: McpServerConfig, log: Logger): StdioClientTransport {
  const transport = new StdioClientTransport({
    command: config.command ?? '',
    args: [...(config.args ?? [])],
    env: { ...getDefaultEnvironment(), ...config.env },
    ...(config.cwd === undefined ? {} : { cwd: config.cwd }),
    stderr: 'pipe',
  });
  transport.stderr?.on('data', (chunk: Buffer) => {
    for (const line of chunk.toString().split('\n')) if (line.trim() !== '') log.debug(`${name} stderr: ${line.trim()}`);
  });
  return transport;
}

async function open(options: ConnectOptions, transport: Transport, kind: McpConnection['transport']): Promise<McpConnection> {
  const { name, log } = options;
  const client = new Client(CLIENT_INFO, { capabilities: CAPABILITIES });
  let closed = false;
  /** We are closing it: the aborted streams' errors are expected. */
  let closing = false;
  let pinger: NodeJS.Timeout | undefined;
  const markClosed = (why: string): void => {
    if (closed) return;
    closed = true;
    clearInterval(pinger);
    options.onClose(why);
  };
  client.onclose = () => markClosed('connection closed');
  client.onerror = (error) => {
    const text = messageOf(error);
    if (closing) log.debug(`${name}: ${text} (closing)`);
    else if (kind !== 'stdio' && FATAL.test(text)) {
      log.warn(`${name}: ${text}; closing the session`);
      void client.close().catch(() => undefined);
      markClosed(text);
    } else log.debug(`${name}: ${briefly(error)}`);
  };
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => options.onToolsChanged());
  client.setRequestHandler(ElicitRequestSchema, async ({ params }, extra): Promise<ElicitResult> => {
    const question: ToolQuestion = params.mode === 'url'
      ? { mode: 'url', server: name, message: params.message, url: params.url }
      : { mode: 'form', server: name, message: params.message, schema: params.requestedSchema as FormSchema };
    return { ...(await options.onQuestion(question, extra.signal)) };
  });
  try {
    await client.connect(transport, { timeout: timerMs(options.timeoutMs) });
  } catch (error) {
    closed = true;
    await client.close().catch(() => undefined);
    throw error;
  }
  if (kind !== 'stdio') {
    pinger = setInterval(() => {
      client.ping({ timeout: 5_000 }).catch((error: unknown) => {
        log.warn(`${name}: ping failed (${messageOf(error)}); closing the session`);
        void client.close().catch(() => undefined);
        markClosed(`ping failed: ${messageOf(error)}`);
      });
    }, PING_EVERY_MS);
    pinger.unref();
  }
  return {
    get pid() {
      return transport instanceof StdioClientTransport ? (transport.pid ?? undefined) : undefined;
    },
    transport: kind,
    async listTools(signal) {
      const tools: RemoteTool[] = [];
      let cursor: string | undefined;
      do {
        const page = await client.listTools(cursor === undefined ? {} : { cursor }, { timeout: timerMs(options.timeoutMs), ...(signal ? { signal } : {}) });
        tools.push(...(page.tools as RemoteTool[]));
        cursor = page.nextCursor;
      } while (cursor !== undefined && cursor !== '');
      return tools;
    },
    async callTool(tool, args, call) {
      const result = await client.callTool({ name: tool, arguments: args }, undefined, {
        timeout: timerMs(call.timeoutMs),
        ...(call.signal ? { signal: call.signal } : {}),
      });
      return result as CallToolResult;
    },
    async ping(timeoutMs) {
      await client.ping({ timeout: timeoutMs });
    },
    async close() {
      clearInterval(pinger);
      closed = true;
      closing = true;
      await client.close();
    },
  };
}

/** An error in one line: an HTTP status and the words of an HTML error page, not its markup. */
function briefly(error: unknown): string {
  const status = (error as { code?: unknown }).code;
  const text = messageOf(error).replace(/<[^>]*>/g, ' ').replace(/\s+/g, ' ').trim().slice(0, 200);
  return typeof status === 'number' && !text.includes(String(status)) ? `HTTP ${status}: ${text}` : text;
}
