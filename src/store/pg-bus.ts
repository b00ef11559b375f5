import type pg from 'pg';
import { loadPg } from './pg-module.ts';

/**
 * Messages between gateway instances sharing one PostgreSQL database, through
 * LISTEN/NOTIFY: one dedicated listening connection per instance (a pooled
 * connection cannot hold a LISTEN), reconnected with backoff whenever the
 * server drops it. Published messages go through the pool, batched per turn of
 * the event loop into as few NOTIFYs as the 8000-byte payload limit allows.
 *
 * NOTIFY is fire-and-forget: a message sent while an instance is disconnected
 * is lost to it, so `onReconnect` lets the caller re-read what it may have
 * missed.
 */

export interface MessageBus {
  /** Queues a message (JSON-serialisable) for every other instance. */
  publish(message: unknown): void;
  /** Connects the listener; `onMessages` gets each batch other instances sent. */
  start(handlers: { onMessages(messages: unknown[]): void; onReconnect(): void }): Promise<void>;
  close(): Promise<void>;
}

const CHANNEL = 'flowgate_events';
/** NOTIFY payloads must stay under 8000 bytes; leave room for the envelope. */
const MAX_PAYLOAD = 7_500;
const RETRY_MIN_MS = 250;
const RETRY_MAX_MS = 5_000;

export function createPgBus(url: string, pool: pg.Pool): MessageBus {
  /** Tells our own messages apart when they come back on our LISTEN. */
  const origin = Math.random().toString(36).slice(2, 12);
  let outbox: string[] = [];
  /** The same message twice in one batch says nothing more (they are all idempotent signals). */
  let queued = new Set<string>();
  let flushing = false;
  let client: pg.Client | undefined;
  let closed = false;
  let retryMs = RETRY_MIN_MS;
  let retryTimer: NodeJS.Timeout | undefined;
  let handlers: { onMessages(messages: unknown[]): void; onReconnect(): void } | undefined;

  const flush = () => {
    flushing = false;
    const items = outbox;
    outbox = [];
    queued = new Set();
    while (items.length > 0) {
      const batch: string[] = [];
      let size = 0;
      while (items.length > 0 && (batch.length === 0 || size + items[0]!.length + 1 < MAX_PAYLOAD)) {
        const item = items.shift()!;
        size += item.length + 1;
        batch.push(item);
      }
      const payload = `{"o":"${origin}","m":[${batch.join(',')}]}`;
      // A lost NOTIFY (database down) costs the others only latency: waiters re-read on their fallback.
      pool.query('select pg_notify($1, $2)', [CHANNEL, payload]).catch(() => {});
    }
  };

  const receive = (payload: string | undefined) => {
    if (!payload || !handlers) return;
    try {
      const envelope = JSON.parse(payload) as { o?: string; m?: unknown[] };
      if (envelope.o === origin || !Array.isArray(envelope.m)) return;
      handlers.onMessages(envelope.m);
    } catch {
      /* not ours */
    }
  };

  const connect = async (reconnecting: boolean): Promise<void> => {
    const next = new (loadPg().Client)({ connectionString: url, connectionTimeoutMillis: 5_000 });
    // Without listeners, a dropped connection's 'error' would crash the process.
    next.on('error', () => lost(next));
    next.on('end', () => lost(next));
    next.on('notification', (n) => receive(n.payload));
    try {
      await next.connect();
      await next.query(`LISTEN ${CHANNEL}`);
    } catch (error) {
      next.removeAllListeners('end');
      next.end().catch(() => {});
      throw error;
    }
    if (closed) return void next.end().catch(() => {});
    client = next;
    retryMs = RETRY_MIN_MS;
    if (reconnecting) handlers?.onReconnect();
  };

  const lost = (which: pg.Client) => {
    if (client !== which) return;
    client = undefined;
    which.end().catch(() => {});
    retry();
  };

  const retry = () => {
    if (closed || retryTimer) return;
    retryTimer = setTimeout(() => {
      retryTimer = undefined;
      connect(true).catch(() => {
        retryMs = Math.min(RETRY_MAX_MS, retryMs * 2);
        retry();
      });
    }, retryMs);
    retryTimer.unref();
  };

  return {
    publish(message) {
      if (closed) return;
      const text = JSON.stringify(message);
      if (queued.has(text)) return;
      queued.add(text);
      outbox.push(text);
      if (flushing) return;
      flushing = true;
      setImmediate(flush);
    },
    async start(h) {
      handlers = h;
      // A database that is down at start must not stop the gateway: keep trying in the background.
      await connect(false).catch(() => retry());
    },
    async close() {
      closed = true;
      clearTimeout(retryTimer);
      const c = client;
      client = undefined;
      await c?.end().catch(() => {});
    },
  };
}
