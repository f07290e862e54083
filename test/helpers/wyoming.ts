/**
 * IRIS's Wyoming services on a loopback port, over an IRIS assembled against the Ollama double;
 * `stop` ends the server, IRIS and the double.
 */
import { Conversations } from '../../src/daemon/conversations.js';
import { createLogger } from '../../src/log.js';
import { serveWyoming, type WyomingOptions } from '../../src/wyoming/server.js';
import { irisServices } from '../../src/wyoming/services.js';
import { withDouble, type Setup } from './conversation.js';

export interface Served {
  port: number;
  s: Setup;
  /** The server's log lines (debug and up). */
  logs: string[];
  stop: () => Promise<void>;
}

export async function serveIris(options: WyomingOptions = {}): Promise<Served> {
  const s = await withDouble();
  const logs: string[] = [];
  const log = createLogger('wyoming', { level: 'debug', write: (line) => logs.push(line) });
  const services = irisServices(() => s.iris.config, new Conversations(() => s.iris.conversation()), log);
  const server = await serveWyoming('tcp://127.0.0.1:0', services, log, options);
  const stop = async () => {
    await server.close();
    await s.iris.stop();
    await s.double.close();
  };
  return { port: server.port, s, logs, stop };
}
