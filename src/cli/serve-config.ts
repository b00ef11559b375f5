import net from 'node:net';

/**
 * `PORT=0` asks for a free port, but the public base URL (printed MCP configs, the data directory's `base-url`
 * that `flowgate mcp` reads, generated documents, 402 resource URLs) is fixed when the configuration loads, before
 * anything listens: it said `http://localhost:0`. So `serve` picks the free port first, by binding port 0 on the
 * same host and letting it go, and loads the configuration with that port. Another process taking it in between
 * fails the start with the usual EADDRINUSE line. An explicit FLOWGATE_BASE_URL is the operator's: left alone.
 */
export async function withConcretePort(env: NodeJS.ProcessEnv): Promise<NodeJS.ProcessEnv> {
  if (env.PORT?.trim() !== '0' || env.FLOWGATE_BASE_URL) return env;
  const host = env.HOST?.trim() || '127.0.0.1';
  const port = await new Promise<number>((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', reject);
    probe.listen(0, host, () => {
      const { port } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(port));
    });
  });
  return { ...env, PORT: String(port) };
}
