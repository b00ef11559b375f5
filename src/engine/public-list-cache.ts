import type { Store } from '../store/db.ts';
import { versioned } from '../store/versioned.ts';
import { deepFreeze } from '../immutable.ts';
import { readPublicWorkflows, type PublicListFilters, type PublicWorkflow } from './public-workflows.ts';

/**
 * GET /api/workflows/public needs no key, and each answer is every selected public workflow's graph, redacted:
 * with eight public workflows of 800 KB, 6.5 MB and about 0.2 s of the shared process per anonymous request. The
 * answers are kept per query while the counter of public workflows (migration 031) stands still, frozen, so a
 * repeated request also skips the output check and serialization (src/immutable.ts). A query not kept still
 * costs the whole read, within the list's 8 MiB bound.
 */

/** Graph characters the kept answers may hold in all (the memory they take is a few times this). */
const MAX_KEPT_CHARS = 16 * 1024 * 1024;
const MAX_KEPT_ANSWERS = 64;

interface Entry {
  answer: Promise<PublicWorkflow[]>;
  /** Known once read. */
  chars: number;
}

interface Kept {
  /** In order of last use: the first is the one to drop. */
  answers: Map<string, Entry>;
  chars: number;
}

/** A fresh set of answers for each value of the counter: an answer read under one version is never served under the next. */
const perVersion = versioned('public_workflows_version', async (): Promise<Kept> => ({ answers: new Map(), chars: 0 }));

function drop(kept: Kept, key: string) {
  const entry = kept.answers.get(key);
  if (!entry) return;
  kept.answers.delete(key);
  kept.chars -= entry.chars;
}

export async function keptPublicWorkflows(store: Store, filters: PublicListFilters): Promise<PublicWorkflow[]> {
  const { value: kept } = await perVersion(store);
  const key = JSON.stringify([filters.featured, filters.featuredProtocol?.toLowerCase(), filters.tag?.toLowerCase(), filters.limit, filters.offset]);
  const hit = kept.answers.get(key);
  if (hit) {
    kept.answers.delete(key);
    kept.answers.set(key, hit);
    return hit.answer;
  }
  const read = readPublicWorkflows(store, filters);
  const entry: Entry = { answer: read.then(({ list }) => deepFreeze(list)), chars: 0 };
  kept.answers.set(key, entry);
  read.then(
    ({ chars }) => {
      if (kept.answers.get(key) !== entry) return;
      entry.chars = chars;
      kept.chars += chars;
      // The least recently used make room; an answer larger than the whole bound is served once and not kept.
      for (const older of kept.answers.keys()) {
        if ((kept.chars <= MAX_KEPT_CHARS && kept.answers.size <= MAX_KEPT_ANSWERS) || older === key) break;
        drop(kept, older);
      }
      if (kept.chars > MAX_KEPT_CHARS) drop(kept, key);
    },
    // A refusal (too large) or a failed read is not kept.
    () => kept.answers.get(key) === entry && drop(kept, key),
  );
  return entry.answer;
}
