import { createHash } from 'node:crypto';
import type { Request, Response } from 'express';
import type { AnyTool, ToolContext } from '../../tools/define.ts';
import { invokeTool } from '../../tools/invoke.ts';
import { sessionTokenFrom } from '../auth/session-cookie.ts';
import { ServiceError } from '../errors.ts';
import { latestWins } from './latest-wins.ts';

/**
 * Server-sent events for a registry entry with `rest.eventStream` (the
 * analytics stream). The entry's handler answers "the current state"; this
 * edge asks it every `intervalMs` and sends it only when it changed, so an
 * idle organization costs one comment per `heartbeatMs`, not a firehose.
 *
 * Each event's `id:` is a digest of its data: a client that reconnects with
 * `Last-Event-ID` (EventSource does so on its own) gets no event until the
 * state differs from what it already has. A session caller is
 * re-authenticated on every check: a revoked session, a lost membership or
 * a switch of organization ends the stream.
 */

/** Run endings within this long of the first are answered by one check. */
const RUN_END_COALESCE_MS = 200;

/**
 * A stream whose reader has taken nothing for this long, with its socket's
 * buffers full, is closed (see latest-wins.ts).
 */
const STALLED_READER_MS = 60_000;

/** Seconds a refused stream is told to wait: about how long a closed tab's stream takes to be noticed. */
const STREAM_RETRY_AFTER_SECONDS = 30;

/**
 * Open streams per organization, per gateway (FLOWGATE_MAX_EVENT_STREAMS_PER_ORG). Each open stream
 * re-reads its summary every few seconds and after run endings: without a bound, one tenant opening
 * thousands of them held the process's CPU.
 */
const openStreams = new WeakMap<ToolContext['services'], Map<string, number>>();

function holdStreamSlot(ctx: ToolContext): () => void {
  const organizationId = ctx.principal?.organizationId;
  if (!organizationId) return () => {};
  let byOrganization = openStreams.get(ctx.services);
  if (!byOrganization) openStreams.set(ctx.services, (byOrganization = new Map()));
  const open = byOrganization.get(organizationId) ?? 0;
  const max = ctx.services.config.maxEventStreamsPerOrg;
  if (open >= max) {
    throw new ServiceError(
      429,
      'rate_limited',
      `This organization already has ${max} event streams open on this instance (FLOWGATE_MAX_EVENT_STREAMS_PER_ORG); each open dashboard tab holds one. Close one, or read GET /api/analytics/summary instead; retry after ${STREAM_RETRY_AFTER_SECONDS} s.`,
      { limit: max, retryAfterSeconds: STREAM_RETRY_AFTER_SECONDS },
      { 'Retry-After': String(STREAM_RETRY_AFTER_SECONDS) },
    );
  }
  byOrganization.set(organizationId, open + 1);
  let released = false;
  return () => {
    if (released) return;
    released = true;
    const left = (byOrganization.get(organizationId) ?? 1) - 1;
    if (left > 0) byOrganization.set(organizationId, left);
    else byOrganization.delete(organizationId);
  };
}

const eventId = (data: unknown) => createHash('sha256').update(JSON.stringify(data)).digest('base64url').slice(0, 22);

export async function serveEventStream(tool: AnyTool, input: Record<string, unknown>, req: Request, res: Response, ctx: ToolContext): Promise<void> {
  const { intervalMs, heartbeatMs, wakeOnRunEnd } = tool.rest!.eventStream!;
  // The first answer comes before any header: a refusal (401, 400) is an ordinary JSON error.
  let data = await invokeTool(tool, input, ctx);
  // After the first answer (which authenticates), before any header: past the bound it is an ordinary 429.
  const releaseSlot = req.method === 'HEAD' ? () => {} : holdStreamSlot(ctx);
  res.once('close', releaseSlot);
  // The caller may have gone while the first answer was read: its 'close' has been and gone.
  if (req.socket.destroyed) return releaseSlot();

  const session = ctx.principal?.kind === 'session' ? ctx.principal : undefined;
  const token = session ? sessionTokenFrom(req.headers.cookie, ctx.services.config.baseUrl) : undefined;
  const stillSignedIn = async () => {
    if (!session) return true;
    const now = token ? await ctx.services.sessions.authenticate(token) : null;
    return now !== null && now.keyId === session.keyId && now.organizationId === session.organizationId;
  };

  res.status(200);
  res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
  res.setHeader('Cache-Control', 'no-cache, no-transform');
  res.setHeader('Connection', 'keep-alive');
  // Proxies (nginx) would otherwise hold events back in a buffer.
  res.setHeader('X-Accel-Buffering', 'no');
  // HEAD gets the headers of the stream and no stream.
  if (req.method === 'HEAD') return void res.end();
  res.flushHeaders();
  res.write(`retry: ${intervalMs}\n\n`);

  // A reader that stops reading holds one summary, the newest, not every one since.
  const out = latestWins(res, STALLED_READER_MS);
  let lastId = typeof req.headers['last-event-id'] === 'string' ? req.headers['last-event-id'] : undefined;
  let lastWrite = Date.now();
  const send = (value: unknown) => {
    const id = eventId(value);
    if (id === lastId) return;
    lastId = id;
    out.offer(`id: ${id}\ndata: ${JSON.stringify(value)}\n\n`);
    lastWrite = Date.now();
  };

  let timer: NodeJS.Timeout | undefined;
  let open = true;
  /** A check is running (its successor is planned when it ends). */
  let checking = false;
  /** A run ended during the running check: the next one comes soon, not after `intervalMs`. */
  let endedMeanwhile = false;
  // A run ending (here or, on PostgreSQL, on another instance) brings the next check forward; a burst of endings is one check.
  // Only this organization's runs change what it sees (an ending whose organization is unknown may be its own).
  const ownOrganization = ctx.principal?.organizationId;
  const offRunEnd = wakeOnRunEnd
    ? ctx.services.engine.events.onAnyFinished((_executionId, organizationId) => {
        if (!open || (organizationId !== undefined && organizationId !== ownOrganization)) return;
        if (checking) return void (endedMeanwhile = true);
        clearTimeout(timer);
        timer = setTimeout(tick, RUN_END_COALESCE_MS);
      })
    : () => {};
  const stop = () => {
    open = false;
    clearTimeout(timer);
    offRunEnd();
    releaseSlot();
  };
  res.on('close', stop);

  const tick = async () => {
    checking = true;
    endedMeanwhile = false;
    try {
      if (!(await stillSignedIn())) {
        stop();
        res.end();
        return;
      }
      data = await invokeTool(tool, input, ctx);
      if (!open) return;
      send(data);
      // While a summary waits for the socket, the connection is not idle: no heartbeat to take its place.
      if (!out.waiting && Date.now() - lastWrite >= heartbeatMs) {
        out.offer(': heartbeat\n\n');
        lastWrite = Date.now();
      }
      // The next check is planned after this one finished: a slow check never piles up behind itself.
      checking = false;
      if (open) timer = setTimeout(tick, endedMeanwhile ? RUN_END_COALESCE_MS : intervalMs);
    } catch (error) {
      // The gateway closing under us (store gone) or a bug: end the stream; the client reconnects and sees any error as JSON.
      if (open) console.error(`[flowgate] event stream ${tool.name} ended:`, (error as Error).message);
      stop();
      res.end();
    }
  };
  send(data);
  timer = setTimeout(tick, intervalMs);
}
