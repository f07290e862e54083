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
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { chooseStt, Engines } from '../pipeline/engines.js';
import type { Logger } from '../log.js';
import { EchoCanceller, EchoReference } from '../pipeline/echo.js';
import { Speaker, earcon } from '../pipeline/playback.js';
import { PlayerStream } from '../pipeline/player.js';
import { StopWord } from '../pipeline/stopword.js';
import { phraseCheck, wakePhrase } from '../pipeline/wake-check.js';
import { LOOK_NEAR_DB } from '../pipeline/wakeword.js';
import { arecordArgs, arecordSource } from '../pipeline/capture.js';
import { probeEcho } from '../daemon/room-ear.js';
import { BlockList, isIP } from 'node:net';
import { lookup } from 'node:dns/promises';
import { satelliteRooms } from '../config/schema.js';
import { describeEndpoint } from '../wyoming/client.js';
import { parseListen } from '../wyoming/server.js';

export interface Check {
  ok: boolean;
  what: string;
  detail: string;
}

export async function doctor(config: Config, configPath: string, stateDir: string, iris: Iris, log: Logger): Promise<Check[]> {
  const checks: Check[] = [await configCheck(config, configPath)];
  checks.push(await stateDirCheck(stateDir));
  checks.push(await ollamaCheck(config));
  const engines = new Engines(() => config, log); // the engines the daemon would choose
  checks.push(await speechOutCheck(config, engines));
  checks.push(...(await audioChecks(config)));
  checks.push(await wakeWordCheck(config, engines));
  checks.push(await echoCheck(config, engines, log));
  checks.push(speechToTextCheck(config, log));
  checks.push(...(await satelliteChecks(config)));
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

async function speechOutCheck(config: Config, engines: Engines): Promise<Check> {
  try {
    const tts = engines.tts();
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
    // The daemon's one way out to the speaker (its stream); 5 s is ample for a 0.2 s chime.
    const signal = AbortSignal.timeout(5_000);
    const speaker = new Speaker(new PlayerStream({ device: output, idleS: 1 }));
    try {
      await speaker.play(earcon(), signal);
    } finally {
      await speaker.close();
    }
    if (signal.aborted) throw new Error('aplay did not finish a 0.2 s chime in 5 s');
    checks.push({ ok: true, what: 'speaker', detail: `ALSA device "${output}" plays (you heard a chime)` });
  } catch (error) {
    checks.push({ ok: false, what: 'speaker', detail: `ALSA device "${output}": ${lastLine(error)} (aplay -L lists devices; set [audio] output)` });
  }
  return checks;
}

/** The echo canceller and the stop word load, and the speaker-to-microphone delay the canceller measures on a test sentence. */
async function echoCheck(config: Config, engines: Engines, log: Logger): Promise<Check> {
  if (!config.audio.echo_cancel) return { ok: true, what: 'echo canceller', detail: 'off ([audio] echo_cancel = false): IRIS cannot hear a person over its own voice' };
  let engine: string = config.audio.echo_canceller;
  try {
    let fallback = '';
    const canceller = await EchoCanceller.create(new EchoReference(1), { engine: config.audio.echo_canceller, onFallback: (reason) => (fallback = ` (${reason})`) });
    engine = `${canceller.engine}${fallback}`;
    canceller.destroy();
  } catch (error) {
    return { ok: false, what: 'echo canceller', detail: messageOf(error) };
  }
  let stop = 'off';
  if (config.audio.stop_word) {
    try {
      (await StopWord.create()).free();
      stop = 'on';
    } catch (error) {
      stop = `off: ${messageOf(error)}`;
    }
  }
  let delay = 'no microphone to measure the speaker-to-microphone delay with';
  if (config.audio.input !== '') {
    try {
      const wav = await engines.tts().synthesize('Testing the echo canceller: one, two, three, four, five, six.');
      const speaker = new PlayerStream({ device: config.audio.output, idleS: 1 });
      const room = await probeEcho(config, log, { source: arecordSource({ device: config.audio.input }), sink: speaker, wav }).finally(() => speaker.close());
      delay = room.delayMs === undefined
        ? 'no echo of a test sentence reached the microphone (nothing to cancel, or the speaker is too quiet)'
        : `speaker-to-microphone delay ${Math.round(room.delayMs)} ms, measured on a test sentence`;
    } catch (error) {
      delay = `the delay could not be measured: ${messageOf(error)}`;
    }
  }
  return { ok: true, what: 'echo canceller', detail: `${engine}; ${delay}; stop word ${stop}` };
}

async function wakeWordCheck(config: Config, engines: Engines): Promise<Check> {
  try {
    const wake = await engines.wake();
    const { wake_threshold: threshold, wake_check_from: from } = config.assistant;
    const check = from > 0 && from < threshold ? await phraseCheck(wakePhrase(wake.word)) : undefined;
    const look = check === undefined ? 'no second look' : check instanceof Error ? `no second look (${check.message})` : `scores from ${from} looked at again (over IRIS's voice: ${LOOK_NEAR_DB} dB above its residual echo)`;
    return { ok: true, what: 'wake word', detail: `"${wake.word}" (openWakeWord), threshold ${threshold}, ${look}` };
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

/** What the unit lets the daemon reach: its IPAddressAllow and IPAddressDeny, as `systemctl show` prints them. */
export interface AddressPolicy {
  allow: string[];
  deny: string[];
}

/** `systemctl show iris -p IPAddressAllow -p IPAddressDeny` read; undefined when there is no unit to ask (no systemd, not installed). */
export async function unitAddressPolicy(): Promise<AddressPolicy | undefined> {
  try {
    const { stdout } = await run('systemctl', ['show', 'iris', '-p', 'IPAddressAllow', '-p', 'IPAddressDeny'], { timeout: 5_000 });
    return parseAddressPolicy(stdout);
  } catch {
    return undefined;
  }
}

/** "IPAddressAllow=127.0.0.0/8 ::1/128\nIPAddressDeny=0.0.0.0/0 ::/0" → the lists; undefined when neither is set. */
export function parseAddressPolicy(shown: string): AddressPolicy | undefined {
  const list = (key: string) => (new RegExp(`^${key}=(.*)$`, 'm').exec(shown)?.[1] ?? '').split(/\s+/).filter(Boolean);
  const policy = { allow: list('IPAddressAllow'), deny: list('IPAddressDeny') };
  return policy.allow.length === 0 && policy.deny.length === 0 ? undefined : policy;
}

/** Whether the unit lets the daemon reach `address` (systemd.resource-control(5): an allowed address is reachable; else a denied one is not). */
export function unitAllows(address: string, policy: AddressPolicy): boolean {
  const matches = (prefixes: string[]): boolean => {
    const list = new BlockList(); // node's own prefix matcher: IPv4 and IPv6, no hand-written bit maths
    for (const entry of prefixes) {
      const [net = '', bits] = entry.split('/');
      const type = isIP(net) === 6 ? 'ipv6' : 'ipv4';
      if (isIP(net) === 0) continue;
      list.addSubnet(net, bits === undefined ? (type === 'ipv6' ? 128 : 32) : Number(bits), type);
    }
    return list.check(address, isIP(address) === 6 ? 'ipv6' : 'ipv4');
  };
  return matches(policy.allow) || !matches(policy.deny);
}

/**
 * Each room's satellite: does it answer `describe` as a satellite, and may the hardened unit
 * reach its address at all (IPAddressDeny=any keeps LAN hosts out unless allowed)?
 */
export async function satelliteChecks(config: Config, policy: () => Promise<AddressPolicy | undefined> = unitAddressPolicy): Promise<Check[]> {
  const rooms = Object.entries(satelliteRooms(config)).filter(([, s]) => s.enabled !== false);
  if (rooms.length === 0) return [];
  const unit = await policy();
  return Promise.all(rooms.map(async ([name, { uri }]): Promise<Check> => {
    const what = `satellite ${name}`;
    const { host } = parseListen(uri);
    let addresses: string[];
    try {
      addresses = isIP(host) === 0 ? (await lookup(host, { all: true })).map((a) => a.address) : [host];
    } catch (error) {
      return { ok: false, what, detail: `${uri}: cannot resolve ${host} (${messageOf(error)})` };
    }
    const blocked = unit === undefined ? [] : addresses.filter((a) => !unitAllows(a, unit));
    if (blocked.length > 0) {
      return { ok: false, what, detail: `${uri}: the iris unit may not reach ${blocked.join(', ')} (IPAddressDeny); allow it with \`sudo systemctl edit iris\`: [Service] IPAddressAllow=${blocked.join(' ')}` };
    }
    try {
      const info = await describeEndpoint(uri);
      const satellite = info.satellite as { name?: unknown; area?: unknown } | undefined;
      if (satellite === undefined) return { ok: false, what, detail: `${uri} answers, but as Wyoming services, not a satellite` };
      return { ok: true, what, detail: `${uri} answers as a satellite${typeof satellite.name === 'string' ? ` (${JSON.stringify(satellite.name.slice(0, 60))})` : ''}` };
    } catch (error) {
      return { ok: false, what, detail: `${uri}: not answering (${messageOf(error)})` };
    }
  }));
}

function lastLine(error: unknown): string {
  const stderr = (error as { stderr?: string }).stderr?.trim();
  return stderr ? (stderr.split('\n').pop() ?? stderr) : messageOf(error);
}
