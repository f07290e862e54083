/** `iris status [--json]`: ask the running daemon how it is. */
import type { Command } from 'commander';
import { request, socketPath } from '../../daemon/control.js';
import type { DaemonStatus } from '../../daemon/protocol.js';
import type { RoomStatus } from '../../daemon/rooms.js';
import { jsonOption, output } from '../output.js';
import { checkNamedConfig, globals, sayWhichConfig } from '../session.js';
import { serverLine } from './mcp.js';

/** One room as `iris status` prints it: "kitchen (kitchen): connected, idle, last heard 12:03:04, \"what time is it\"". */
function roomLine(room: RoomStatus): string {
  const parts = [room.state === 'connected' ? `connected, ${room.doing}` : room.state];
  if (room.mode !== undefined) parts.push(room.mode === 'wake' ? 'IRIS hears the wake word' : 'the satellite hears the wake word');
  if (room.behind_s !== undefined) parts.push(`heard ${room.behind_s} s late (too many rooms for this machine)`);
  if (room.last_heard !== undefined) parts.push(`last heard ${new Date(room.last_heard).toLocaleTimeString()}`);
  if (room.last_transcript !== undefined) parts.push(JSON.stringify(room.last_transcript));
  if (room.state !== 'connected' && room.detail !== undefined) parts.push(room.detail);
  return `${room.name} (${room.area}, ${room.uri}): ${parts.join(', ')}`;
}

export function statusLines(status: DaemonStatus): string[] {
  const loaded = status.ollama.loaded === null ? 'Ollama not answering' : status.ollama.loaded ? 'loaded' : 'not loaded';
  const { echo, early_answers: early, over_iris: heard } = status.voice;
  return [
    `IRIS is running (pid ${status.pid}, up ${status.uptime_s} s), home zone ${status.home_zone}`,
    `model: ${status.ollama.model} at ${status.ollama.url} (${loaded})`,
    `timers and reminders: ${status.timers}`,
    ...status.mcp.map((s) => `MCP ${serverLine(s)}`),
    `voice: ${status.voice.state.replace(/_/g, ' ')} (${status.voice.detail})`,
    ...(echo ? [`echo canceller: ${echo.canceller}${echo.delay_ms === undefined ? ' (delay not measured yet: IRIS has not talked)' : `, speaker-to-microphone delay ${echo.delay_ms} ms`}`] : []),
    ...(early ? [`early answers: ${early.on ? `on, ${early.started} started, ${early.taken_back} taken back because the person went on` : 'off'}`] : []),
    ...(heard ? [`heard over IRIS's voice: the wake word ${heard.barge_ins}, "stop" ${heard.stop_words}; its own wake word ignored ${heard.own_wakes_ignored}`] : []),
    ...(status.rooms ?? []).map((room) => `room ${roomLine(room)}`),
  ];
}

export function register(program: Command): void {
  program
    .command('status')
    .description('ask the running daemon how it is')
    .addOption(jsonOption())
    .action(async (_opts, cmd: Command) => {
      const g = globals(cmd);
      await checkNamedConfig(g);
      const status = await request(socketPath(), { cmd: 'status' }, 10_000);
      await sayWhichConfig(g, status.config);
      output(g.json, status, () => statusLines(status));
    });
}
