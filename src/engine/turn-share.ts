/**
 * How long the engine may hold the event loop in one stretch. Steps that run
 * inline (Condition, math, templates, Collect, For Each iterations of those)
 * are synchronous stretches between awaits, and the awaits they reach (a
 * group commit every MAX_HELD log rows) resolve in the same turn for every
 * run at once: with 32 runs of one tenant looping, each turn carried 32 such
 * stretches, and every other request, another tenant's included, waited
 * behind them (README, issue 18's thirteenth pass).
 *
 * So each step asks first. Within `sliceMs` of the slice's start it goes on
 * at once, with no promise and no timer (a short run never waits here);
 * after that it waits for the loop's next check phase: a step stopped while
 * sockets are being read lets the rest of them be served first, one stopped
 * in a check phase lets the next turn's timers and sockets go first. There every
 * waiting run goes on again, first come first, under a fresh slice: the first
 * ones use the slice, the others take one step each and wait again, so no
 * run stalls and the engine's share of a turn stays about one slice plus one
 * step per waiting run.
 */
export const SLICE_MS = 2;

export interface TurnShare {
  /** Called before each step: undefined to go on now, or a promise that settles at the step's turn. */
  awaitTurn(): Promise<void> | undefined;
}

export function createTurnShare(sliceMs = SLICE_MS, now: () => number = () => performance.now()): TurnShare {
  let sliceStart = 0;
  /** A slice is open from the first step that asks in a turn until the next check phase (setImmediate). */
  let open = false;
  const waiting: (() => void)[] = [];
  let drainScheduled = false;

  const closeSlice = () => {
    open = false;
  };
  const startSlice = () => {
    open = true;
    sliceStart = now();
    setImmediate(closeSlice);
  };
  const scheduleDrain = () => {
    if (drainScheduled) return;
    drainScheduled = true;
    setImmediate(drain);
  };
  function drain() {
    drainScheduled = false;
    startSlice();
    for (const resume of waiting.splice(0)) resume();
  }

  return {
    awaitTurn() {
      if (!open) {
        startSlice();
        return undefined;
      }
      if (now() - sliceStart < sliceMs) return undefined;
      return new Promise<void>((resolve) => {
        waiting.push(resolve);
        scheduleDrain();
      });
    },
  };
}

/** The process's one share: every run's steps take turns on the same event loop. */
export const engineTurns = createTurnShare();
