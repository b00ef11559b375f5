import { ServiceError } from '../errors.ts';

/**
 * A list of workflows is read in batches and given up as soon as its rows'
 * stored text passes MAX_WHOLE_LIST_CHARS: each workflow is up to a request
 * body of graph, so an organization's 10,000 (or every tenant's public ones)
 * could be gigabytes, read into the one process every tenant shares by a
 * single request. A page is bounded the same way: 200 rows of a megabyte each
 * would be 200 MB. Past the bound the caller is told what to ask for instead.
 * At 64 MiB one list cost half a second of CPU and hundreds of MB of memory;
 * 8 MiB still holds a thousand workflows of 8 KB.
 */
export const MAX_WHOLE_LIST_CHARS = 8 * 1024 * 1024;
const MAX_BATCH = 200;
/** About the largest graph one request can save (FLOWGATE_BODY_LIMIT_BYTES's default): batches are sized so one never reads far past the bound. */
const LARGE_ROW_CHARS = 1024 * 1024;

export interface ListBounds {
  /** What the list is, for the refusal ("This organization's workflows"). */
  what: string;
  /** A request that asks for pages. */
  example: string;
  /** The page size asked for; undefined: the whole list. */
  limit?: number;
}

/**
 * `page` reads `limit` rows after `last` (the previous batch's last row; undefined for the first batch,
 * which starts at the caller's offset). Seeking by a key that orders the whole list means a row written
 * meanwhile neither repeats nor hides another; a caller whose order has no such key pages by offset and
 * says how it copes.
 */
export async function readBoundedList<R>(
  page: (limit: number, last: R | undefined) => Promise<R[]>,
  charsOf: (row: R) => number,
  bounds: ListBounds,
): Promise<R[]> {
  const wanted = bounds.limit ?? Infinity;
  const rows: R[] = [];
  let chars = 0;
  for (;;) {
    // As many rows as fit in what is left of the bound if each were as large as a request can make it.
    const fit = Math.max(1, Math.floor((MAX_WHOLE_LIST_CHARS - chars) / LARGE_ROW_CHARS));
    const size = Math.min(MAX_BATCH, fit, wanted - rows.length);
    const batch = await page(size, rows.at(-1));
    for (const row of batch) {
      chars += charsOf(row);
      if (chars > MAX_WHOLE_LIST_CHARS) throw tooLarge(bounds, rows.length);
      rows.push(row);
    }
    if (batch.length < size || rows.length >= wanted) return rows;
  }
}

function tooLarge({ what, example, limit }: ListBounds, fitted: number): ServiceError {
  const bound = `${MAX_WHOLE_LIST_CHARS / (1024 * 1024)} MiB`;
  const message =
    limit === undefined
      ? `${what} hold more than ${bound} of graphs in all, too much to answer in one piece: ask for pages with limit (1 to 200) and offset, e.g. ${example}, until a page has fewer than limit rows.`
      : `This page of ${what.charAt(0).toLowerCase()}${what.slice(1)} (limit=${limit}) holds more than ${bound} of graphs, too much to answer in one piece: ask for fewer rows at a time, e.g. limit=${Math.max(1, fitted)}, and go on with offset.`;
  return new ServiceError(400, 'invalid_input', message, { field: 'limit', limit: MAX_WHOLE_LIST_CHARS });
}
