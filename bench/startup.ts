/**
 * Start and memory (`npm run bench`, or alone: `node --import tsx bench/startup.ts`):
 * - cold start: spawn → first 200 on /healthz of `node bin/flowgate.js serve`
 *   (what `npm start` runs) on a fresh data directory with the embedded
 *   devnet, against the anchor: a bare express app that spawns anvil (the same
 *   binary the devnet runs) and then answers;
 * - idle RSS 3 s after ready: the gateway's process tree without anvil (its
 *   own process and any children) against a bare express process.
 * The CLI's bundle (bin/bundle.js) is built before the trials, as it is after
 * the first start of an installed or edited tree.
 * Medians of STARTUP_TRIALS (default 5) alternating trials, anchors measured in the same run.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { anvilBinary } from '../src/chains/anvil.ts';
import { median, processCpuMs } from './stats.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const TRIALS = Number(process.env.STARTUP_TRIALS ?? 5);
const IDLE_MS = 3_000;

/** The anchor, in plain JS (no tsx): express plus anvil spawned the way src/chains/anvil.ts does; listens once anvil listens. */
const BARE_APP = `
import express from 'express';
import { spawn } from 'node:child_process';
const app = express();
app.get('/healthz', (_req, res) => res.json({ ok: true }));
const withAnvil = process.env.ANVIL_BIN !== '';
const listen = () => { const server = app.listen(0, '127.0.0.1', () => console.log('listening on http://127.0.0.1:' + server.address().port)); };
if (!withAnvil) listen();
else {
  const anvil = spawn(process.env.ANVIL_BIN, ['--host', '127.0.0.1', '--port', '0', '--chain-id', '31337'], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  anvil.stdout.on('data', (chunk) => { out += chunk; if (out !== null && /Listening on/.test(out)) { out = null; anvil.stdout.resume(); listen(); } });
  process.on('SIGTERM', () => { anvil.kill('SIGTERM'); process.exit(0); });
}
`;

interface Trial {
  readyMs: number;
  /** CPU time (user + system) the process itself used until ready: steadier than wall time on a busy machine. */
  cpuMs: number;
  /** RSS of the process tree without anvil, IDLE_MS after ready (MB). */
  rssMb?: number;
}

function descendants(pid: number): number[] {
  let children: number[] = [];
  try {
    children = fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
  return children.flatMap((child) => [child, ...descendants(child)]);
}

const isAnvil = (pid: number) => {
  try {
    return path.basename(fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0] ?? '').startsWith('anvil');
  } catch {
    return false;
  }
};

function rssKb(pid: number): number {
  try {
    return Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
  } catch {
    return 0;
  }
}

const treeRssMb = (pid: number) => [pid, ...descendants(pid).filter((child) => !isAnvil(child))].reduce((sum, p) => sum + rssKb(p), 0) / 1024;

/** Spawns `args`, waits for its "listening on URL" line, polls URL/healthz until 200, then samples RSS. */
async function trial(args: string[], env: NodeJS.ProcessEnv, measureRss: boolean): Promise<Trial> {
  const started = performance.now();
  // The caller's FLOWGATE_* settings (a configured devnet, a base URL) would change what starts.
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('FLOWGATE_')));
  const child = spawn(process.execPath, args, { cwd: ROOT, env: { ...inherited, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let errors = '';
  child.stderr!.on('data', (chunk: Buffer) => (errors += chunk.toString()));
  try {
    const url = await new Promise<string>((resolve, reject) => {
      let out = '';
      child.stdout!.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        const match = /listening on (http:\/\/[^\s)]+)/i.exec(out);
        if (match) resolve(match[1]!);
      });
      child.once('exit', (code) => reject(new Error(`${args.join(' ')} exited with ${code} before listening: ${errors.slice(-800)}`)));
    });
    for (;;) {
      const ok = await fetch(`${url}/healthz`).then(
        (response) => response.status === 200,
        () => false,
      );
      if (ok) break;
      await new Promise((r) => setTimeout(r, 5));
    }
    const readyMs = performance.now() - started;
    const cpuMs = processCpuMs(child.pid!);
    child.stdout!.resume();
    if (!measureRss) return { readyMs, cpuMs };
    await new Promise((r) => setTimeout(r, IDLE_MS));
    return { readyMs, cpuMs, rssMb: treeRssMb(child.pid!) };
  } finally {
    await stop(child);
  }
}

async function stop(child: ChildProcess) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

export async function benchStartup(trials = TRIALS): Promise<void> {
  const anvil = anvilBinary();
  const anchorStart: number[] = [];
  const anchorCpu: number[] = [];
  const anchorRss: number[] = [];
  const gatewayStart: number[] = [];
  const gatewayCpu: number[] = [];
  const gatewayRss: number[] = [];
  const bare = ['--input-type=module', '-e', BARE_APP];
  spawnSync(process.execPath, ['bin/flowgate.js', '--version'], { cwd: ROOT, stdio: 'ignore' });
  // Alternate the runs so that background load on the machine hits both sides alike.
  for (let i = 0; i < trials; i++) {
    const anchor = await trial(bare, { ANVIL_BIN: anvil }, false);
    anchorStart.push(anchor.readyMs);
    anchorCpu.push(anchor.cpuMs);
    anchorRss.push((await trial(bare, { ANVIL_BIN: '' }, true)).rssMb!);
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'flowgate-startup-'));
    try {
      const gateway = await trial(['bin/flowgate.js', 'serve'], { PORT: '0', HOST: '127.0.0.1', FLOWGATE_DATA_DIR: dataDir }, true);
      gatewayStart.push(gateway.readyMs);
      gatewayCpu.push(gateway.cpuMs);
      gatewayRss.push(gateway.rssMb!);
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  }
  const row = (name: string, anchorName: string, anchor: number[], ours: number[], unit: string, digits: number) =>
    `| ${name} | ${anchorName}: ${median(anchor).toFixed(digits)} ${unit} | ${median(ours).toFixed(digits)} ${unit} | ${(median(ours) / median(anchor)).toFixed(1)}x | ${ours.map((v) => v.toFixed(digits)).join(', ')} |`;
  console.log(`\nStart and memory: medians of ${trials} trials, node ${process.version}, ${os.cpus().length} cores\n`);
  console.log(['| measure | anchor (same run) | Flowgate | ratio to anchor | Flowgate trials |', '|---|---:|---:|---:|---|'].join('\n'));
  console.log(
    row(
      'cold start: spawn → first 200 on /healthz (fresh data dir, embedded devnet)',
      'bare express + anvil',
      anchorStart.map((ms) => ms / 1000),
      gatewayStart.map((ms) => ms / 1000),
      's',
      2,
    ),
  );
  console.log(
    row(
      'CPU until ready (user + system, the process itself, without anvil)',
      'bare express + anvil',
      anchorCpu.map((ms) => ms / 1000),
      gatewayCpu.map((ms) => ms / 1000),
      's',
      2,
    ),
  );
  console.log(row('idle RSS 3 s after ready (process tree without anvil)', 'bare express', anchorRss, gatewayRss, 'MB', 0));
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await benchStartup();
