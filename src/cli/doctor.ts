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
import { createTextToSpeech } from '../pipeline/tts.js';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { chooseStt } from '../daemon/voice.js';
import type { Logger } from '../log.js';
import { createOpenWakeWord } from '../pipeline/wakeword.js';
import { earcon } from '../pipeline/playback.js';
import { arecordArgs } from '../pipeline/capture.js';

export interface Check {
  ok: boolean;
  what: string;
  detail: string;
}

export async function doctor(config: Config, configPath: string, stateDir: string, iris: Iris, log: Logger): Promise<Check[]> {
  const checks: Check[] = [await configCheck(config, configPath)];
  checks.push(await stateDirCheck(stateDir));
  checks.push(await ollamaCheck(config));
  checks.push(await speechOutCheck(config));
  checks.push(...(await audioChecks(config)));
  checks.push(await wakeWordCheck(config));
  checks.push(speechToTextCheck(config, log));
  await iris.mcp.servers.startAll(); // a real start, not the cached tool lists
  for (const server of iris.mcp.servers.status()) {
    const ok = server.state === 'up' || server.state === 'disabled';
    const detail = server.state === 'disabled'
      ? 'disabled in the config'
      : `${server.state === 'needs-sign-in' ? 'needs sign-in' : server.state}${server.transport ? ` over ${server.transport}` : ''}, ${server.tools} tools${server.reason ? ` (${server.reason})` : ''}`;
    checks.push({ ok, what: `MCP server ${server.name}`, detail });
  }
  return checks;
}

/** The config was loaded (a broken one stops the command before this); say what was read. */
async function configCheck(config: Config, path: string): Promise<Check> {
  const found = await access(path).then(() => true, () => false);
  if (!found) return { ok: true, what: 'config', detail: `${path} not found, using defaults` };
  const servers = config.mcp.servers_file === '' ? '' : ` (MCP servers also from ${config.mcp.servers_file})`;
  return { ok: true, what: 'config', detail: `${path} is valid${servers}` };
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
    const tts = createTextToSpeech(config);
    const wav = await tts.synthesize('ok');
    const voice = (await tts.describe?.()) ?? config.tts.voice;
    // A Piper voice that could not be loaded still speaks (espeak-ng), but not as configured.
    const fellBack = config.tts.engine === 'piper' && !voice.startsWith('Piper');
    return { ok: !fellBack, what: 'speech out', detail: `${voice} (${wav.length} bytes for "ok")` };
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

const run = promisify(execFile);

/** Open the microphone for 0.1 s and the speaker for a chime: what the daemon will do. */
async function audioChecks(config: Config): Promise<Check[]> {
  const { input, output } = config.audio;
  const checks: Check[] = [];
  if (input === '') checks.push({ ok: true, what: 'microphone', detail: 'off ([audio] input is empty): text, timers and tools only' });
  else {
    try {
      await run('arecord', [...arecordArgs(input), '-s', '1600', '/dev/null'], { timeout: 5_000 });
      checks.push({ ok: true, what: 'microphone', detail: `ALSA device "${input}" records 16 kHz mono` });
    } catch (error) {
      checks.push({ ok: false, what: 'microphone', detail: `ALSA device "${input}": ${lastLine(error)} (arecord -L lists devices; set [audio] input)` });
    }
  }
  try {
    const child = run('aplay', ['-q', '-D', output, '-'], { timeout: 5_000 });
    child.child.stdin?.on('error', () => undefined); // aplay failing to open the device exits before reading
    child.child.stdin?.end(earcon());
    await child;
    checks.push({ ok: true, what: 'speaker', detail: `ALSA device "${output}" plays (you heard a chime)` });
  } catch (error) {
    checks.push({ ok: false, what: 'speaker', detail: `ALSA device "${output}": ${lastLine(error)} (aplay -L lists devices; set [audio] output)` });
  }
  return checks;
}

async function wakeWordCheck(config: Config): Promise<Check> {
  try {
    const wake = await createOpenWakeWord({ model: config.assistant.wake_word, threshold: config.assistant.wake_threshold });
    return { ok: true, what: 'wake word', detail: `"${wake.word}" (openWakeWord), threshold ${config.assistant.wake_threshold}` };
  } catch (error) {
    return { ok: false, what: 'wake word', detail: messageOf(error) };
  }
}

function speechToTextCheck(config: Config, log: Logger): Check {
  const { stt, reason } = chooseStt(config, log);
  if (stt.name !== 'pocketsphinx' || config.stt.engine === 'pocketsphinx') return { ok: true, what: 'speech to text', detail: reason };
  return {
    ok: true,
    what: 'speech to text',
    detail: `${reason}. It understands time, arithmetic and timer commands only; for everything else run: sudo iris models fetch base.en`,
  };
}

function lastLine(error: unknown): string {
  const stderr = (error as { stderr?: string }).stderr?.trim();
  return stderr ? (stderr.split('\n').pop() ?? stderr) : messageOf(error);
}
