import { describe, expect, it } from 'vitest';
import { RunEvents } from '../src/engine/run-events.ts';

describe('RunEvents', () => {
  it('answers a wait that starts after the run ended at once, with its status', async () => {
    const events = new RunEvents();
    events.finished('run-1', 'success');
    // Waiting out the 60 s would fail the test by its own timeout.
    expect(await events.waitFor('run-1', 60_000)).toBe('success');
  });

  it('does not treat unconfirmed as an end: a later wait still waits for the verdict', async () => {
    const events = new RunEvents();
    events.finished('run-2', 'unconfirmed');
    const waiting = events.waitFor('run-2', 60_000);
    events.finished('run-2', 'error');
    expect(await waiting).toBe('error');
    expect(await events.waitFor('run-3', 10)).toBeUndefined();
  });
});
