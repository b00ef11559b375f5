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

  it('a subscription taken before the end hears it with the outcome; a closed one hears nothing', async () => {
    const events = new RunEvents();
    const outcome = { status: 'success', output: { result: 1 }, error: null, transactionHashes: [], gasUsedWei: null, completedAt: '2026-01-01T00:00:00.000Z' };
    const sub = events.subscribe('run-4', 60_000);
    expect(events.awaited('run-4')).toBe(true);
    events.finished('run-4', 'success', outcome);
    expect(await sub.ended).toEqual({ status: 'success', outcome });
    expect(events.awaited('run-4')).toBe(false);
    const closed = events.subscribe('run-5', 60_000);
    closed.close();
    expect(events.awaited('run-5')).toBe(false);
    events.finished('run-5', 'error');
    expect(await closed.ended).toBeUndefined();
  });
});
