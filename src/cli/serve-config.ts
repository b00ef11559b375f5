import net from 'node:net';
import { loadConfig, type Config } from '../config.ts';

/**
 * `serve`'s configuration. `PORT=0` asks for a free port, but the public base URL (printed MCP configs, the data
 * directory's `base-url` that `flowgate mcp` reads, generated documents, 402 resource URLs) is fixed when the
 * configuration loads, before anything listens: it said `http://localhost:0`. So a port of 0 is resolved first, by
 * binding port 0 on the configured host and letting it go, and the configuration is loaded again with that port.
 * Another process taking it in between fails the start with the usual EADDRINUSE line. An explicit
 * FLOWGATE_BASE_URL is the operator's: left alone.
 */
export async function loadServeConfig(env: NodeJS.ProcessEnv): Promise<Config> {
  const config = loadConfig(env);
  if (config.port !== 0 || env.FLOWGATE_BASE_URL) return config;
  const port = await new Promise<number>((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', reject);
    probe.listen(0, config.host, () => {
      const { port } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(port));
    });
  });
  return loadConfig({ ...env, PORT: String(port) });
}
