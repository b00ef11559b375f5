import { describe, expect, it } from 'vitest';
import { createTurnShare } from '../src/engine/turn-share.ts';

/**
 * The engine's steps share the event loop with every request: once a slice is used, a step waits for the loop's next
 * check phase, where every waiting run goes on again under a fresh slice. The clock here is the test's, so the order
 * of events is exact; the event loop is the real one.
 */
function clock() {
  let t = 1_000;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('turn share', () => {
  it('lets steps within the slice go on at once, without a promise', async () => {
    const c = clock();
    const share = createTurnShare(2, c.now);
    expect(share.awaitTurn()).toBeUndefined();
    c.advance(1.9);
    expect(share.awaitTurn()).toBeUndefined();
    // A new turn opens a new slice, however long ago the last one began.
    await nextTurn();
    await nextTurn();
    c.advance(50);
    expect(share.awaitTurn()).toBeUndefined();
  });

  it('makes steps past the slice wait for a later turn, then lets every waiting run go on, first come first', async () => {
    const c = clock();
    const share = createTurnShare(2, c.now);
    share.awaitTurn();
    c.advance(5);
    const order: string[] = [];
    const names = ['a', 'b', 'c'];
    const waits = names.map(() => share.awaitTurn());
    expect(waits.every((w) => w instanceof Promise)).toBe(true);
    // Work queued after the runs stopped waits behind them: they were first.
    setImmediate(() => order.push('queued'));
    await Promise.all(waits.map((w, i) => w!.then(() => order.push(names[i]!))));
    await nextTurn();
    expect(order).toEqual(['a', 'b', 'c', 'queued']);
  });

  it('shares the fresh slice: the first resumed run uses it, the next take a step each and wait again, and nobody stalls', async () => {
    const c = clock();
    const share = createTurnShare(2, c.now);
    share.awaitTurn();
    c.advance(5);
    const steps: string[] = [];
    // Each run takes `count` steps of `cost` ms, asking before each.
    const run = async (name: string, count: number, cost: number) => {
      for (let i = 0; i < count; i++) {
        const wait = share.awaitTurn();
        if (wait) {
          steps.push(`${name}:wait`);
          await wait;
        }
        steps.push(`${name}${i}`);
        c.advance(cost);
      }
    };
    await Promise.all([run('a', 3, 0.5), run('b', 2, 0.5)]);
    // Both stopped at once (the slice was used); in the next turn a took three steps in its fresh slice
    // (0 + 0.5 + 0.5 + 0.5 ms), b found it used, waited one more turn, and went on.
    expect(steps).toEqual(['a:wait', 'b:wait', 'a0', 'a1', 'a2', 'b0', 'b:wait', 'b1']);
  });
});
