import { Worker } from 'node:worker_threads';
const w = new Worker(new URL('./w.ts', import.meta.url), { execArgv: ['--import', 'tsx'], resourceLimits: { stackSizeMb: 16 } });
w.on('message', (m) => { console.log('got', m); w.terminate(); });
w.on('error', (e) => console.log('err', e));
