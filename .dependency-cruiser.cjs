/**
 * Which folder may import which (README "Architecture"): imports point
 * downward, edge → registry → domain → store. Checked by `npm run lint`.
 */
const EDGE = '^src/(http|mcp|cli|discovery|docs)/|^src/(cli|gateway)\\.ts$';
const DOMAIN = '^src/(engine|actions|execute|onchain|guards|chains|wallets|payments|auth|org|catalog|net|sandbox|text)/|^src/[^/]+\\.ts$';

module.exports = {
  forbidden: [
    {
      name: 'domain-imports-no-edge',
      comment: 'Domain code (engine, execute, payments, chains, org, ...) never imports an edge (HTTP, MCP, CLI, generated documents).',
      severity: 'error',
      from: { path: DOMAIN, pathNot: '^src/(cli|gateway)\\.ts$' },
      to: { path: EDGE },
    },
    {
      name: 'domain-imports-no-registry',
      comment: 'Domain code never imports the tool registry (tools/): the registry calls the domain, not the reverse.',
      severity: 'error',
      from: { path: DOMAIN, pathNot: '^src/(cli|gateway)\\.ts$' },
      to: { path: '^tools/' },
    },
    {
      name: 'registry-imports-no-edge',
      comment: 'Registry entries are transport-free: no express, no MCP SDK, no CLI.',
      severity: 'error',
      from: { path: '^tools/' },
      to: { path: '^src/(http|mcp|cli)/|^src/cli\\.ts$|^node_modules/(express|@modelcontextprotocol)/' },
    },
    {
      name: 'store-imports-nothing-above',
      comment: 'The store knows only its own schema and migrations.',
      severity: 'error',
      from: { path: '^src/store/' },
      to: { path: '^src/', pathNot: '^src/store/' },
    },
    {
      name: 'no-express-or-mcp-sdk-in-domain',
      comment: 'HTTP and MCP libraries stay at the edge (DESIGN: nothing below the registry imports express or the MCP SDK).',
      severity: 'error',
      from: { path: DOMAIN, pathNot: '^src/(cli|gateway)\\.ts$' },
      to: { path: '^node_modules/(express|@modelcontextprotocol)/' },
    },
    {
      name: 'execute-imports-no-engine',
      comment: 'Direct execution and the workflow engine meet in src/onchain (preparation, the web3 step table, the one write path): engine → onchain ← execute.',
      severity: 'error',
      from: { path: '^src/execute/' },
      to: { path: '^src/engine/' },
    },
    {
      name: 'engine-imports-no-execute',
      comment: 'The engine reaches the chain through src/onchain, never through direct execution.',
      severity: 'error',
      from: { path: '^src/engine/' },
      to: { path: '^src/execute/' },
    },
    {
      name: 'onchain-imports-no-engine-or-execute',
      comment: 'src/onchain is shared by the engine and direct execution, so it imports neither.',
      severity: 'error',
      from: { path: '^src/onchain/' },
      to: { path: '^src/(engine|execute)/' },
    },
    {
      name: 'bench-imports-no-tests',
      comment: 'Benchmarks stand on their own, never on test helpers.',
      severity: 'error',
      from: { path: '^bench/' },
      to: { path: '^test/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js'] },
  },
};
