import { describe, expect, it } from 'vitest';
import { newId, newSortableId } from '../src/ids.ts';

describe('ids', () => {
  it('are 21 URL-safe characters', () => {
    for (const id of [newId(), newSortableId()]) expect(id).toMatch(/^[A-Za-z0-9_-]{21}$/);
  });

  it('start with a letter, so an id never reads as a command-line flag', () => {
    const ids = Array.from({ length: 2000 }, newId);
    expect(ids.every((id) => /^[A-Za-z][A-Za-z0-9_-]{20}$/.test(id))).toBe(true);
    expect(new Set(ids).size).toBe(2000);
  });

  it('sortable ids sort by creation time, start with a letter, and differ within one millisecond', () => {
    const start = Date.UTC(2026, 10, 22);
    const ids = [0, 1, 63, 64, 4096, 86_400_000, 10 * 365 * 86_400_000].map((offset) => newSortableId(start + offset));
    expect([...ids].sort()).toEqual(ids);
    expect(ids.every((id) => /^[A-Za-z]/.test(id))).toBe(true);
    const sameMillisecond = new Set(Array.from({ length: 1000 }, () => newSortableId(start)));
    expect(sameMillisecond.size).toBe(1000);
  });
});
