import { runUserCode } from '../src/sandbox/quickjs.ts';
// No other handle alive: the busy worker must keep the process up until the result arrives.
runUserCode('let x = 0; for (let i = 0; i < 1e6; i++) x += i; return x', null).then((r) => console.log('result', r.result));
