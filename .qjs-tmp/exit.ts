import { evaluateExpression } from '../src/sandbox/quickjs.ts';
const t = Date.now();
console.log(await evaluateExpression('1+1', {}));
process.on('exit', () => console.log('exited after', Date.now() - t, 'ms'));
