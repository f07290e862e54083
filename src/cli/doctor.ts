/**
 * `iris doctor`: check what IRIS needs on this machine and say how to fix what is missing.
 * One line per check, ✓ or ✗; exit 1 when anything failed.
 */
import { access, constants, mkdir } from 'node:fs/promises';
import type { Config } from '../config/schema.js';
import { ChatError } from '../conversation/backend.js';
import { createOllamaBackend } from '../conversation/ollama.js';
import type { Iris } from '../daemon/assemble.js';
import { messageOf } from '../errors.js';
import { createEspeak } from '../pipeline/espeak.js';

export interface Check {
  ok: boolean;
  what: string;
  detail: string;
}

export async function doctor(config: Config, configPath: string, stateDir: string, iris: Iris): Promise<Check[]> {
  const checks: Check[] = [{ ok: true, what: 'config', detail: `${configPath} is valid` }];
  checks.push(await stateDirCheck(stateDir));
  checks.push(await ollamaCheck(config));
  checks.push(await speechOutCheck(config));
  await iris.mcp.servers.startAll(); // a real start, not the cached tool lists
  for (const server of iris.mcp.servers.status()) {
    const ok = server.state === 'up' || server.state === 'disabled';
    const detail = server.state === 'disabled'
      ? 'disabled in the config'
      : `${server.state}${server.transport ? ` over ${server.transport}` : ''}, ${server.tools} tools${server.reason ? ` (${server.reason})` : ''}`;
    checks.push({ ok, what: `MCP server ${server.name}`, detail });
  }
  return checks;
}

async function stateDirCheck(dir: string): Promise<Check> {
  try {
    await mkdir(dir, { recursive: true });
    await access(dir, constants.W_OK);
    return { ok: true, what: 'state dir', detail: `${dir} is writable` };
  } catch (error) {
    return { ok: false, what: 'state dir', detail: `${dir}: ${messageOf(error)} (set IRIS_STATE_DIR or fix its owner)` };
  }
}

async function speechOutCheck(config: Config): Promise<Check> {
  try {
    const wav = await createEspeak({ voice: config.tts.voice, rateWpm: config.tts.rate_wpm }).synthesize('ok');
    return { ok: true, what: 'speech out', detail: `espeak-ng voice ${config.tts.voice} (${wav.length} bytes for "ok")` };
  } catch (error) {
    return { ok: false, what: 'speech out', detail: messageOf(error) };
  }
}

async function ollamaCheck(config: Config): Promise<Check> {
  const { url, model } = config.ollama;
  try {
    const info = await createOllamaBackend(url).show(model, AbortSignal.timeout(5_000));
    const tools = info.capabilities.length === 0 || info.capabilities.includes('tools');
    const context = info.contextLength === undefined ? '' : `, context up to ${info.contextLength} tokens`;
    return {
      ok: true,
      what: 'Ollama',
      detail: `${model} at ${url}${tools ? ', with tool calling' : ', without tool calling (IRIS uses its text tool protocol)'}${context}`,
    };
  } catch (error) {
    if (error instanceof ChatError && error.code === 'model_not_found') {
      return { ok: false, what: 'Ollama', detail: `${model} is not installed at ${url}; run: ollama pull ${model}` };
    }
    return { ok: false, what: 'Ollama', detail: `${messageOf(error)}; is Ollama running? (systemctl status ollama)` };
  }
}
