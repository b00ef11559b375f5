import fs from 'node:fs';
import path from 'node:path';
import { defineConfig } from 'vite';
import { dashboardSourceHash, SOURCE_HASH_FILE } from './source-hash.ts';

/**
 * The dashboard build: Preact through esbuild's automatic JSX runtime (no
 * Babel), served by the gateway under /app (src/http/app-route.ts). The
 * output in web/dist is committed so `npm start` needs no build step.
 */
export default defineConfig({
  root: import.meta.dirname,
  base: '/app/',
  esbuild: { jsx: 'automatic', jsxImportSource: 'preact' },
  plugins: [
    {
      name: 'flowgate-source-hash',
      closeBundle() {
        fs.writeFileSync(path.join(import.meta.dirname, 'dist', SOURCE_HASH_FILE), `${dashboardSourceHash()}\n`);
      },
    },
  ],
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    // One small bundle; no module preload polyfill (an inline script the CSP would refuse).
    modulePreload: { polyfill: false },
    sourcemap: false,
    target: 'es2022',
    chunkSizeWarningLimit: 400,
  },
});
