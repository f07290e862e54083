/**
 * The control socket's protocol, declared once for both ends (control.ts serves and sends it;
 * daemon.ts answers it; the CLI asks). One JSON request per line, one JSON reply per line.
 */
import type { TurnResult } from '../conversation/types.js';
import type { CallToolResult } from '../toolhost/api.js';
import type { ServerStatus } from '../toolhost/mcp/servers.js';
import type { VoiceStatus } from './voice.js';
import type { RoomStatus } from './rooms.js';

export type ControlRequest =
  | { cmd: 'status' }
  | { cmd: 'reload' }
  /** The daemon's config file (absolute): commands say which config answered them. */
  | { cmd: 'config' }
  /** `conversation`: continue that client's conversation; without it, a new one. */
  | { cmd: 'ask'; text: string; conversation?: string }
  /** `iris tools call` and `iris timers`: the person's own command (no confirmation asked). */
  | { cmd: 'tools.call'; name: string; arguments?: unknown }
  /** `iris mcp login` / `logout` changed a server's sign-in: connect it again now. */
  | { cmd: 'mcp.reconnect'; name: string };

export type Command = ControlRequest['cmd'];

export interface DaemonStatus {
  pid: number;
  uptime_s: number;
  /** The config file the daemon runs with. */
  config: string;
  state_dir: string;
  home_zone: string;
  /** `loaded`: whether Ollama has the model in memory now (null: Ollama did not answer). */
  ollama: { url: string; model: string; loaded: boolean | null };
  timers: number;
  mcp: ServerStatus[];
  voice: VoiceStatus;
  /** The satellites' rooms (`[satellites.NAME]`). */
  rooms: RoomStatus[];
}

/** What each command answers with. */
export interface ControlResults {
  status: DaemonStatus;
  reload: { reloaded: string };
  config: { path: string };
  ask: TurnResult & { conversation: string };
  'tools.call': CallToolResult;
  'mcp.reconnect': ServerStatus;
}

/** `busy`: refused for now (too many connections); the same request may be sent again. */
export type ControlReply<C extends Command = Command> = { ok: true; result: ControlResults[C] } | { ok: false; error: string; busy?: true };

/** The request of one command. */
export type RequestOf<C extends Command> = Extract<ControlRequest, { cmd: C }>;

/** A request line as received, checked: the request, or what is wrong with it. */
export function parseRequest(line: string): ControlRequest | string {
  let value: unknown;
  try {
    value = JSON.parse(line) as unknown;
  } catch (error) {
    return `bad request: ${error instanceof Error ? error.message : String(error)}`;
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return 'bad request: not a JSON object';
  const request = value as Record<string, unknown>;
  switch (request.cmd) {
    case 'status':
    case 'reload':
    case 'config':
      return { cmd: request.cmd };
    case 'ask':
      if (typeof request.text !== 'string' || request.text.trim() === '') return 'bad request: "ask" needs a "text"';
      if (request.conversation !== undefined && typeof request.conversation !== 'string') return 'bad request: "conversation" must be a string';
      return { cmd: 'ask', text: request.text, ...(request.conversation === undefined ? {} : { conversation: request.conversation }) };
    case 'tools.call':
      if (typeof request.name !== 'string' || request.name === '') return 'bad request: "tools.call" needs a "name"';
      return { cmd: 'tools.call', name: request.name, arguments: request.arguments ?? {} };
    case 'mcp.reconnect':
      if (typeof request.name !== 'string' || request.name === '') return 'bad request: "mcp.reconnect" needs a "name"';
      return { cmd: 'mcp.reconnect', name: request.name };
    default:
      return typeof request.cmd === 'string' ? `unknown command "${request.cmd}"` : 'bad request: no "cmd"';
  }
}
