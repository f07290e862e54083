import { createServer } from 'node:net';

/**
 * A loopback port with nothing listening on it, below Linux's ephemeral range (32768–60999), so
 * no outgoing connection of a parallel test takes it as its local port before it is used: a
 * port handed out by `listen(0)` and closed again can be, and a later `listen` on it then fails
 * with EADDRINUSE.
 */
export async function closedPort(): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    const server = createServer();
    const free = await new Promise<boolean>((resolve) => {
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => resolve(true));
    });
    if (free) {
      await new Promise((resolve) => server.close(resolve));
      return port;
    }
  }
}
