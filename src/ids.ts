import { nanoid } from 'nanoid';

/**
 * A 21-character URL-safe random id (the spec's opaque id length). nanoid
 * draws from a pooled buffer of random bytes: one system call per many ids,
 * where a `randomBytes` call per id cost the engine noticeably per step.
 */
export const newId = (): string => nanoid();

export const nowIso = () => new Date().toISOString();
