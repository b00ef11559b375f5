import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { isGone } from './helpers/stall-reporter.ts';
import { runVitest } from './helpers/vitest-run.ts';

/**
 * The suite's stall reporter (test/helpers/stall-reporter.ts), on a vitest run
 * of its own with shortened bounds: one file ends, one loops forever. The run
 * must name the looping file, end as failed, and leave no process behind.
 */

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
    const { code, output } = await runVitest(
      dir,
      `export default { test: { globals: true, pool: 'forks', include: ['*.test.js'], reporters: ['default', ${JSON.stringify(REPORTER)}] } };\n`,
      { FLOWGATE_TEST_STALL_MS: '2000', FLOWGATE_TEST_STALL_ABORT_MS: '5000' },
    );

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
