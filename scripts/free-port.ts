import net from 'node:net';

/** A loopback TCP port nothing listens on right now (the OS picks it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/**
 * `start` on a free port, once more on another (up to 5 tries) when `taken`
 * says the port was grabbed between freePort() closing its probe and the
 * server listening (any process's outgoing connection can take it).
 */
export async function onFreePort<T>(start: (port: number) => Promise<T>, taken: (error: unknown) => boolean): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start(await freePort());
    } catch (error) {
      if (!taken(error) || attempt === 5) throw error;
    }
  }
}
