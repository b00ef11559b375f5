import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { isGone } from './helpers/stall-reporter.ts';

/**
 * The suite's stall reporter (test/helpers/stall-reporter.ts), on a vitest run
 * of its own with shortened bounds: one file ends, one loops forever. The run
 * must name the looping file, end as failed, and leave no process behind.
 */

const VITEST = path.resolve('node_modules/vitest/vitest.mjs');
const REPORTER = path.resolve('test/helpers/stall-reporter.ts');

describe('the stall reporter', () => {
  it('names the file that never ends, kills its worker and fails the run', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'flowgate-stall-'));
    const pidFile = path.join(dir, 'worker.pid');
    fs.writeFileSync(path.join(dir, 'ends.test.js'), `test('ends', () => {});\n`);
    fs.writeFileSync(
      path.join(dir, 'loops.test.js'),
      `import fs from 'node:fs';\ntest('loops', () => { fs.writeFileSync(${JSON.stringify(pidFile)}, String(process.pid)); for (;;) {} });\n`,
    );
    fs.writeFileSync(
      path.join(dir, 'vitest.config.mjs'),
      `export default { test: { globals: true, pool: 'forks', include: ['*.test.js'], reporters: ['default', ${JSON.stringify(REPORTER)}] } };\n`,
    );
    const child = spawn(process.execPath, [VITEST, 'run', '--root', dir, '--config', path.join(dir, 'vitest.config.mjs')], {
      cwd: path.resolve('.'),
      env: { ...process.env, FLOWGATE_TEST_STALL_MS: '2000', FLOWGATE_TEST_STALL_ABORT_MS: '5000', CI: 'true' },
    });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));

    expect(code, output).toBe(1);
    expect(output).toMatch(/\[stall\] no test file has finished for \d+ s; still running:\n {2}\S*loops\.test\.js \(running \d+ s\)/);
    expect(output).toContain('[stall] ending the run as failed after 5 s without progress.');
    expect(output).not.toMatch(/\S*ends\.test\.js \(running/);
    // The worker that looped is gone with the run.
    const workerPid = Number(fs.readFileSync(pidFile, 'utf8'));
    expect(isGone(workerPid)).toBe(true);
    fs.rmSync(dir, { recursive: true, force: true });
  }, 60_000);
});
