import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const VITEST = path.resolve('node_modules/vitest/vitest.mjs');

/** A vitest run of its own on `dir`, with `config` (the text of a vitest.config.mjs) written there: its exit code and all it printed. */
export async function runVitest(dir: string, config: string, env: Record<string, string> = {}): Promise<{ code: number | null; output: string }> {
  fs.writeFileSync(path.join(dir, 'vitest.config.mjs'), config);
  const child = spawn(process.execPath, [VITEST, 'run', '--root', dir, '--config', path.join(dir, 'vitest.config.mjs')], {
    cwd: path.resolve('.'),
    env: { ...process.env, CI: 'true', ...env },
  });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  return { code, output };
}
