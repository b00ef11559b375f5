import { spawn } from 'node:child_process';
import path from 'node:path';
import { testDatabaseEnv } from './gateway.ts';

/** Runs the real `flowgate` binary as the host operator would. */

const BIN = path.resolve('bin/flowgate.js');

export async function runCli(args: string[], env: Record<string, string>) {
  const database = env.FLOWGATE_DATA_DIR ? await testDatabaseEnv(env.FLOWGATE_DATA_DIR, env) : {};
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, FLOWGATE_DEVNET: 'off', ...database, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => (stderr += c));
    child.once('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

/** `flowgate open` on a gateway's data directory; returns the printed link. */
export async function openLink(dataDir: string, baseUrl: string, org?: string): Promise<string> {
  const result = await runCli(['open', ...(org ? ['--org', org] : [])], { FLOWGATE_DATA_DIR: dataDir, FLOWGATE_BASE_URL: baseUrl });
  if (result.code !== 0) throw new Error(`flowgate open failed (${result.code}): ${result.stderr}`);
  const link = result.stdout.split('\n').find((line) => line.startsWith('http'));
  if (!link) throw new Error(`flowgate open printed no link: ${result.stdout}`);
  return link.trim();
}
