/**
 * `node --import tsx bench/edge-cpu.ts [--against DIR]`: the CPU time one request costs the HTTP edge,
 * in process, without sockets. Each request is a real `IncomingMessage`/`ServerResponse` pair on a
 * socket that discards what it is sent, handed to the express app, so the figure is the app's own work
 * (middleware, routing, the handler, serializing) and none of the kernel's. The anchor is a bare express
 * JSON route driven the same way in the same rounds.
 *
 * Why beside `npm run bench`: over loopback the socket writes and this VM's speed spells swing a row by
 * ±20% between runs, more than most edge changes move it. Here the gateway and the anchor alternate in
 * short rounds in one process, and `--against DIR` (another checkout, with its node_modules) adds that
 * checkout's gateway to the same rounds: each round's ratio to it is paired, and their median printed.
 * EDGE_ROUNDS (default 30) rounds of EDGE_REQUESTS (default 2000) requests per row.
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { Duplex } from 'node:stream';
import { median } from './stats.ts';
import { bareExpressApp } from './bare-express.ts';

const ROUNDS = Number(process.env.EDGE_ROUNDS ?? 30);
const REQUESTS = Number(process.env.EDGE_REQUESTS ?? 2000);
const againstIndex = process.argv.indexOf('--against');
const against = againstIndex > 0 ? path.resolve(process.argv[againstIndex + 1]!) : undefined;

type App = (req: http.IncomingMessage, res: http.ServerResponse) => void;

/** A checkout's HTTP app on a fresh data directory (no devnet, no rate limits: the edge alone). */
async function gatewayApp(root: string): Promise<{ app: App; close(): Promise<void> }> {
  const { loadConfig } = await import(path.join(root, 'src/config.ts'));
  const { createGateway } = await import(path.join(root, 'src/gateway.ts'));
  const { createHttpApp } = await import(path.join(root, 'src/http/app.ts'));
  const { registry } = await import(path.join(root, 'tools/index.ts'));
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'flowgate-edge-cpu-'));
  const gateway = await createGateway(
    loadConfig({ PORT: '0', FLOWGATE_DATA_DIR: dataDir, FLOWGATE_DEVNET: 'off', FLOWGATE_RATE_LIMITS: 'off', FLOWGATE_BASE_URL: 'http://127.0.0.1:3000' }),
  );
  return { app: createHttpApp(gateway.services, registry), close: () => gateway.close() };
}

class DiscardingSocket extends Duplex {
  override _read() {}
  override _write(_chunk: unknown, _encoding: BufferEncoding, done: () => void) {
    done();
  }
  override _writev(_chunks: unknown, done: () => void) {
    done();
  }
}
const socket = Object.assign(new DiscardingSocket(), { remoteAddress: '127.0.0.1' });

interface Probe {
  name: string;
  path: string;
  body?: string;
}

function request(app: App, probe: Probe): Promise<number> {
  return new Promise((resolve) => {
    const req = new http.IncomingMessage(socket as never);
    req.method = probe.body ? 'POST' : 'GET';
    req.url = probe.path;
    req.headers = {
      host: '127.0.0.1:3000',
      connection: 'keep-alive',
      accept: probe.body ? 'application/json, text/event-stream' : '*/*',
      ...(probe.body && { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(probe.body)) }),
    };
    if (probe.body) req.push(probe.body);
    req.push(null);
    req.complete = true;
    const res = new http.ServerResponse(req);
    res.assignSocket(socket as never);
    res.on('finish', () => {
      res.detachSocket(socket as never);
      resolve(res.statusCode);
    });
    app(req, res);
  });
}

/** CPU µs per request over one round. */
async function round(app: App, probe: Probe): Promise<number> {
  const before = process.cpuUsage();
  for (let i = 0; i < REQUESTS; i++) {
    const status = await request(app, probe);
    if (status !== 200) throw new Error(`${probe.name}: status ${status}`);
  }
  const used = process.cpuUsage(before);
  return (used.user + used.system) / REQUESTS;
}

const bare = bareExpressApp();

const probes: Probe[] = [
  { name: 'GET /api/chains', path: '/api/chains' },
  {
    name: 'MCP tools/call list_chains',
    path: '/mcp',
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'list_chains', arguments: {} } }),
  },
];

const here = await gatewayApp(path.resolve(import.meta.dirname, '..'));
const other = against ? await gatewayApp(against) : undefined;
const anchor: Probe = { name: 'bare express JSON route (anchor)', path: '/bare' };

const rows: string[] = [];
const anchorRounds: number[] = [];
for (const probe of probes) {
  const mine: number[] = [];
  const theirs: number[] = [];
  const paired: number[] = [];
  for (let i = -3; i < ROUNDS; i++) {
    // Alternating order, after three untimed rounds of warm-up.
    const a = await round(bare, anchor);
    let m: number;
    let t: number | undefined;
    if (other && i % 2 !== 0) {
      t = await round(other.app, probe);
      m = await round(here.app, probe);
    } else {
      m = await round(here.app, probe);
      t = other && (await round(other.app, probe));
    }
    if (i < 0) continue;
    anchorRounds.push(a);
    mine.push(m);
    if (t !== undefined) {
      theirs.push(t);
      paired.push(m / t);
    }
  }
  const vsAnchor = median(mine) / median(anchorRounds);
  rows.push(
    `| ${probe.name} | ${median(mine).toFixed(1)} | ${vsAnchor.toFixed(2)}x | ${other ? `${median(theirs).toFixed(1)} | ${median(paired).toFixed(3)}` : '| '} |`,
  );
}

console.log(`\nEdge CPU per request, in process (${ROUNDS} rounds of ${REQUESTS} requests per row${against ? `; against ${against}` : ''})\n`);
console.log('| request | CPU µs/req | CPU vs the anchor | other checkout: CPU µs/req | this ÷ other, paired median |');
console.log('|---|---:|---:|---:|---:|');
console.log(`| ${anchor.name} | ${median(anchorRounds).toFixed(1)} | 1.00x | | |`);
for (const row of rows) console.log(row);
await here.close();
await other?.close();
process.exit(0);
