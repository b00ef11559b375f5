import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import solc from 'solc';

/**
 * Compiles the test-only contracts under contracts/fixtures with the npm `solc`
 * package and writes their committed artifacts to test/fixtures (abi +
 * runtime bytecode: tests place them with anvil_setCode, so no constructor
 * runs). Run: npm run build:fixtures. Tests never compile.
 */

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

export const FIXTURES = [
  { contractName: 'AavePoolFixture', source: 'contracts/fixtures/AavePoolFixture.sol', artifact: 'test/fixtures/aave-pool-fixture.json' },
  { contractName: 'ChainlinkFeedFixture', source: 'contracts/fixtures/ChainlinkFeedFixture.sol', artifact: 'test/fixtures/chainlink-feed-fixture.json' },
  { contractName: 'Erc20ReadFixture', source: 'contracts/fixtures/Erc20ReadFixture.sol', artifact: 'test/fixtures/erc20-read-fixture.json' },
  { contractName: 'CometFixture', source: 'contracts/fixtures/CometFixture.sol', artifact: 'test/fixtures/comet-fixture.json' },
  { contractName: 'QuoterV2Fixture', source: 'contracts/fixtures/QuoterV2Fixture.sol', artifact: 'test/fixtures/quoter-v2-fixture.json' },
  { contractName: 'Erc1271WalletFixture', source: 'contracts/fixtures/Erc1271WalletFixture.sol', artifact: 'test/fixtures/erc1271-wallet-fixture.json' },
] as const;

export interface RuntimeArtifact {
  contractName: string;
  compiler: string;
  abi: unknown[];
  deployedBytecode: `0x${string}`;
}

export function compileFixture(fixture: (typeof FIXTURES)[number]): RuntimeArtifact {
  const file = path.basename(fixture.source);
  const input = {
    language: 'Solidity',
    sources: { [file]: { content: fs.readFileSync(path.join(ROOT, fixture.source), 'utf8') } },
    settings: {
      optimizer: { enabled: true, runs: 200 },
      evmVersion: 'cancun',
      metadata: { bytecodeHash: 'none', appendCBOR: false },
      outputSelection: { '*': { '*': ['abi', 'evm.deployedBytecode.object'] } },
    },
  };
  const output = JSON.parse(solc.compile(JSON.stringify(input)));
  const errors = (output.errors ?? []).filter((e: { severity: string }) => e.severity === 'error');
  if (errors.length) throw new Error(errors.map((e: { formattedMessage: string }) => e.formattedMessage).join('\n'));
  const contract = output.contracts[file][fixture.contractName];
  return {
    contractName: fixture.contractName,
    compiler: `solc ${solc.version()}`,
    abi: contract.abi,
    deployedBytecode: `0x${contract.evm.deployedBytecode.object}`,
  };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  for (const fixture of FIXTURES) {
    const artifact = compileFixture(fixture);
    fs.writeFileSync(path.join(ROOT, fixture.artifact), `${JSON.stringify(artifact, null, 2)}\n`);
    console.log(`${fixture.contractName}: ${(artifact.deployedBytecode.length - 2) / 2} bytes runtime (${artifact.compiler}) → ${fixture.artifact}`);
  }
}
