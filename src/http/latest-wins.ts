import type { Writable } from 'node:stream';

/**
 * A writer for streams whose every message replaces the one before (the
 * analytics summary): while the socket has not taken what was written
 * (`writableNeedDrain`), only the newest message is held back and it goes out
 * on 'drain'. A reader that stops reading therefore costs one message of
 * memory, not everything sent since; one that has not drained within
 * `stallMs` is disconnected, freeing whatever it holds.
 */
export interface LatestWins {
  /** Writes `text` now, or keeps it (replacing any kept one) until the socket drains. */
  offer(text: string): void;
  /** True while a message waits for the socket. */
  readonly waiting: boolean;
}

export function latestWins(out: Writable, stallMs: number): LatestWins {
  let pending: string | undefined;
  let stallTimer: NodeJS.Timeout | undefined;
  const onDrain = () => {
    clearTimeout(stallTimer);
    stallTimer = undefined;
    const text = pending;
    pending = undefined;
    if (text !== undefined) write(text);
  };
  const write = (text: string) => {
    if (out.write(text) || out.destroyed) return;
    out.once('drain', onDrain);
    stallTimer = setTimeout(() => out.destroy(), stallMs);
    stallTimer.unref();
  };
  out.once('close', () => clearTimeout(stallTimer));
  return {
    offer(text) {
      if (out.destroyed) return;
      if (out.writableNeedDrain) pending = text;
      else write(text);
    },
    get waiting() {
      return out.writableNeedDrain;
    },
  };
}
