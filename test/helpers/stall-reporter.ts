import fs from 'node:fs';
import type { Reporter, TestModule } from 'vitest/node';

/**
 * Names the test files still running when none has finished for a while.
 * vitest prints a file only when it ends, so a file that never ends is
 * invisible in a CI log that its time limit then cuts off (one CI run stopped
 * at 5,400 s with every printed file passed and nothing to say which hung).
 * After STALL_MS without a file ending, this prints each running file, its
 * project and how long it has run; after ABORT_MS it ends the run as failed,
 * naming them, instead of leaving CI to wait for its limit. It kills the
 * run's processes first: a worker stuck in a loop outlives vitest's exit, and
 * holds CI's output open. The longest file takes about two minutes, so
 * neither bound is near a healthy run.
 */

// Shorter bounds only for test/stall-reporter.test.ts, which runs a file that never ends.
const STALL_MS = Number(process.env.FLOWGATE_TEST_STALL_MS) || 5 * 60_000;
const ABORT_MS = Number(process.env.FLOWGATE_TEST_STALL_ABORT_MS) || 20 * 60_000;

export default class StallReporter implements Reporter {
  private readonly running = new Map<string, { project: string; since: number }>();
  private lastEnd = Date.now();
  private lastReport = 0;
  private timer: NodeJS.Timeout | undefined;

  onTestRunStart(): void {
    this.lastEnd = Date.now();
    this.timer = setInterval(() => this.check(), Math.min(30_000, STALL_MS / 4));
    this.timer.unref();
  }

  onTestModuleStart(module: TestModule): void {
    this.running.set(`${module.project.name}\0${module.moduleId}`, { project: module.project.name, since: Date.now() });
  }

  onTestModuleEnd(module: TestModule): void {
    this.running.delete(`${module.project.name}\0${module.moduleId}`);
    this.lastEnd = Date.now();
  }

  onTestRunEnd(): void {
    clearInterval(this.timer);
  }

  private check(): void {
    const now = Date.now();
    const quiet = now - this.lastEnd;
    if (quiet < STALL_MS || now - this.lastReport < STALL_MS) return;
    this.lastReport = now;
    const files = [...this.running].map(
      ([key, { project, since }]) => `  ${project ? `${project} ` : ''}${key.split('\0')[1]} (running ${Math.round((now - since) / 1000)} s)`,
    );
    const head = `[stall] no test file has finished for ${Math.round(quiet / 1000)} s; still running:`;
    process.stderr.write(`${head}\n${files.join('\n') || '  (none: the pool itself is waiting)'}\n`);
    if (quiet >= ABORT_MS) {
      process.stderr.write(`[stall] ending the run as failed after ${Math.round(ABORT_MS / 1000)} s without progress.\n`);
      const pids = descendants(process.pid);
      for (const pid of pids) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          /* already gone */
        }
      }
      awaitGone(pids);
      process.exit(1);
    }
  }
}

/**
 * Waits, up to 10 s, until each killed process has exited. SIGKILL takes effect
 * only when the process next runs, and on a loaded machine a looping worker
 * may not run for a while; exiting first would leave it behind.
 */
function awaitGone(pids: number[]): void {
  const sleeper = new Int32Array(new SharedArrayBuffer(4));
  for (const deadline = Date.now() + 10_000; Date.now() < deadline;) {
    if (pids.every(isGone)) return;
    Atomics.wait(sleeper, 0, 0, 20);
  }
}

/** The processes below `root` (workers, and the chains and servers they started), read from Linux's /proc; none elsewhere. */
function descendants(root: number): number[] {
  const children = new Map<number, number[]>();
  let entries: string[];
  try {
    entries = fs.readdirSync('/proc');
  } catch {
    return [];
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = processStat(Number(entry));
    if (stat) children.set(stat.parent, [...(children.get(stat.parent) ?? []), Number(entry)]);
  }
  const found: number[] = [];
  for (let next = [root]; next.length > 0;) {
    next = next.flatMap((pid) => children.get(pid) ?? []);
    found.push(...next);
  }
  return found;
}

/** Whether `pid` has exited: gone from /proc, or a zombie (exited, not yet reaped), which holds nothing. */
export const isGone = (pid: number) => (processStat(pid)?.state ?? 'Z') === 'Z';

/** A process's state letter (Z: exited, not yet reaped) and parent, from Linux's /proc; undefined when it is gone. */
export function processStat(pid: number): { state: string; parent: number } | undefined {
  try {
    // "pid (name) state ppid ...": the name may hold spaces and parentheses, so read after its last ')'.
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const [state, parent] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { state: state!, parent: Number(parent) };
  } catch {
    return undefined;
  }
}
