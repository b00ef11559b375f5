import { fork } from 'node:child_process';
import type { LoadResult, LoadSpec } from './load-process.ts';

export type { LoadSpec };

export interface MeasuredLoad extends LoadResult {
  /** CPU time (user + system) of this process, which runs the server under test, per sample, in ms. */
  serverCpuMsPerSample: number;
}

/**
 * Runs the load generator (bench/load-process.ts) in a child process against
 * a server in this process, and measures this process's CPU time over the
 * measured part only (after the child's warm-up).
 */
export function externalLoad(spec: LoadSpec): Promise<MeasuredLoad> {
  const child = fork(new URL('./load-process.ts', import.meta.url).pathname, [JSON.stringify(spec)], { execArgv: ['--import', 'tsx'] });
  let cpuAtStart = process.cpuUsage();
  return new Promise((resolve, reject) => {
    child.on('message', (message: { ready: true } | LoadResult) => {
      if ('ready' in message) {
        cpuAtStart = process.cpuUsage();
        return;
      }
      const cpu = process.cpuUsage(cpuAtStart);
      resolve({ ...message, serverCpuMsPerSample: (cpu.user + cpu.system) / 1000 / Math.max(message.samplesPerSecond * spec.durationSeconds, 1) });
    });
    child.once('error', reject);
    child.once('exit', (code) => {
      if (code !== 0) reject(new Error(`the load generator exited with code ${code}`));
    });
  });
}
