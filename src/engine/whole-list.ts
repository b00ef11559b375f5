import { ServiceError } from '../errors.ts';

/**
 * A list asked for whole (no `limit`) is read page by page and given up as
 * soon as its rows' stored text passes MAX_WHOLE_LIST_CHARS: each workflow is
 * up to a request body of graph, so an organization's 10,000 (or every
 * tenant's public ones) could be gigabytes, read into the one process every
 * tenant shares by a single request. Past the bound the caller is told to ask
 * for pages, which every such list takes.
 */
export const MAX_WHOLE_LIST_CHARS = 64 * 1024 * 1024;
const PAGE = 200;

/**
 * `page` reads `limit` rows after `last` (the previous page's last row; undefined for the first page).
 * Seeking by a key that orders the whole list means a row written meanwhile neither repeats nor hides
 * another; a caller whose order has no such key pages by offset and says how it copes.
 */
export async function readWholeList<R>(
  page: (limit: number, last: R | undefined) => Promise<R[]>,
  charsOf: (row: R) => number,
  describe: { what: string; example: string },
): Promise<R[]> {
  const rows: R[] = [];
  let chars = 0;
  for (;;) {
    const batch = await page(PAGE, rows.at(-1));
    for (const row of batch) chars += charsOf(row);
    if (chars > MAX_WHOLE_LIST_CHARS) {
      throw new ServiceError(
        400,
        'invalid_input',
        `${describe.what} hold more than ${MAX_WHOLE_LIST_CHARS / (1024 * 1024)} MiB of graphs in all, too much to answer in one piece: ask for pages with limit (1 to 200) and offset, e.g. ${describe.example}, until a page has fewer than limit rows.`,
        { field: 'limit', limit: MAX_WHOLE_LIST_CHARS },
      );
    }
    rows.push(...batch);
    if (batch.length < PAGE) return rows;
  }
}
