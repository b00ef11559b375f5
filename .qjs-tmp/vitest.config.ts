import { defineConfig } from 'vitest/config';
export default defineConfig({ test: { include: ['.qjs-tmp/**/*.test.ts'], pool: 'forks' } });
