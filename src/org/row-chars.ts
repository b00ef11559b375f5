/**
 * JSON characters of one result row, as the run data limit will count it: a blob as a Buffer writes
 * itself ({"type":"Buffer","data":[…]}), counted without making that array; a value JSON cannot
 * spell counts as nothing (the step fails later). Self-contained on purpose: its source is also the
 * SQLite child process's (sqlite-process.ts), which runs plain JavaScript with nothing imported.
 */
export function rowChars(row: unknown): number {
  try {
    if (!row || typeof row !== 'object') return JSON.stringify(row)?.length ?? 0;
    let n = 1;
    for (const [key, value] of Object.entries(row)) {
      let size = 4;
      if (value instanceof Uint8Array) {
        size = 25;
        for (const b of value) size += b < 10 ? 2 : b < 100 ? 3 : 4;
      } else size = JSON.stringify(value)?.length ?? 4;
      n += JSON.stringify(key).length + 2 + size;
    }
    return n;
  } catch {
    return 0;
  }
}
