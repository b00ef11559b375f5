import fs from 'node:fs';
import path from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { rawGet, startTestGateway, type TestGateway } from './helpers/gateway.ts';

/** The copy-paste SIWE script of /docs/authentication, run as published (base URL filled in) against a real gateway. */

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway();
});
afterAll(async () => gw?.close());

it('the wallet sign-in example signs in and reads the session', async () => {
  const page = (await rawGet(`${gw.url}/docs/authentication.md`)).body;
  const script = /```js\n([\s\S]*?)```/.exec(page)?.[1];
  expect(script).toContain(`const base = '${gw.url}'`);
  // Inside the repository, so `viem` resolves from its node_modules as it would in a reader's project.
  const file = path.join(process.cwd(), `.docs-sign-in-${process.pid}.mjs`);
  fs.writeFileSync(file, script!);
  try {
    const key = generatePrivateKey();
    const { stdout } = await promisify(execFile)(process.execPath, [file], { env: { ...process.env, PRIVATE_KEY: key }, timeout: 30_000 });
    const address = privateKeyToAccount(key).address;
    expect(stdout).toContain('created: true');
    expect(stdout).toContain(`walletAddress: '${address}'`);
    expect(stdout).toMatch(/role: 'owner'/);
    expect(stdout).toMatch(/expiresAt: '/);
  } finally {
    fs.rmSync(file, { force: true });
  }
});
