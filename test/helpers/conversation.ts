import { parseConfig } from '../../src/config/load.js';
import { createLogger, type Logger } from '../../src/log.js';
import { assemble } from '../../src/daemon/assemble.js';
import { OllamaDouble, type ModelSpec } from './ollama-double.js';
import { tempDir } from './tmp.js';
import type { Conversation } from '../../src/conversation/engine.js';

export interface Setup {
  double: OllamaDouble;
  iris: ReturnType<typeof assemble>;
  logs: string[];
}

export type Sections = Record<string, Record<string, string | number | boolean>>;

/** Config sections as TOML (flat tables of scalars are all the tests need). */
export function toml(sections: Sections): string {
  return Object.entries(sections)
    .map(([name, keys]) => `[${name}]\n${Object.entries(keys).map(([k, v]) => `${k} = ${JSON.stringify(v)}`).join('\n')}\n`)
    .join('');
}

/** A real Ollama double on loopback and an IRIS assembled against it. */
export async function withDouble(
  sections: Sections = {},
  options: { models?: Record<string, ModelSpec>; now?: () => number; url?: string; extraToml?: string } = {},
): Promise<Setup> {
  const double = await new OllamaDouble(options.models).start();
  const logs: string[] = [];
  const log: Logger = createLogger('test', { level: 'debug', write: (line) => logs.push(line), journald: false });
  const merged: Sections = {
    ...sections,
    ollama: { url: options.url ?? double.url, ...sections.ollama },
    assistant: { timezone: 'Europe/Berlin', ...sections.assistant },
  };
  const config = parseConfig(`${toml(merged)}\n${options.extraToml ?? ''}`, 'test-config');
  const iris = assemble(config, { stateDir: tempDir(), log, ...(options.now ? { now: options.now } : {}) });
  return { double, iris, logs };
}

/** Every sentence a turn says, once the turn is over. */
export async function sayAll(conversation: Conversation, text: string): Promise<string[]> {
  const turn = conversation.turn(text);
  const said: string[] = [];
  for await (const sentence of turn.sentences) said.push(sentence);
  await turn.result;
  return said;
}

/** Watch the event loop: `stop()` gives its longest stall (ms) since the start, sampled every 10 ms. */
export function stallProbe(): { stop: () => number } {
  let stalledMs = 0;
  let last = performance.now();
  const probe = setInterval(() => {
    stalledMs = Math.max(stalledMs, performance.now() - last);
    last = performance.now();
  }, 10);
  return { stop: () => (clearInterval(probe), stalledMs) };
}
