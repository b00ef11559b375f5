import http from 'node:http';
import type { Duplex } from 'node:stream';
import type { RequestListener } from 'node:http';

/**
 * The Node HTTP server under the express app. A client has
 * `requestTimeoutMs` to send a whole request, headers and body: a body
 * shorter than its Content-Length is answered 408 and the socket closed,
 * instead of holding the socket until the client gives up. Errors Node
 * raises before express sees a request get the same `{error, code}` JSON
 * as every other error.
 */

const REASONS: Record<number, string> = { 400: 'Bad Request', 408: 'Request Timeout', 431: 'Request Header Fields Too Large' };

function rawJsonResponse(status: number, code: string, error: string): string {
  const body = JSON.stringify({ error, code });
  return `HTTP/1.1 ${status} ${REASONS[status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
}

function answerFor(error: NodeJS.ErrnoException, requestTimeoutMs: number): string {
  switch (error.code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return rawJsonResponse(
        408,
        'request_timeout',
        `The request (headers and body) was not received within ${requestTimeoutMs} ms; a body must be as long as its Content-Length.`,
      );
    case 'HPE_HEADER_OVERFLOW':
      return rawJsonResponse(431, 'headers_too_large', 'The request headers are too large.');
    default:
      return rawJsonResponse(400, 'bad_request', 'Malformed HTTP request.');
  }
}

export interface NodeServer {
  server: http.Server;
  /**
   * Graceful stop: no new connections; event-stream subscriptions (GET) are
   * ended; every other request in flight may finish within `graceMs`, so a
   * transfer or paid call is not cut between its broadcast and its record
   * (also when its client has hung up: the handler still runs on the store).
   * A connection is closed once its answer is out (a request that still
   * arrives on one is served, with Connection: close). Then every
   * connection left is closed.
   */
  drain(graceMs: number): Promise<void>;
}

/** A GET answered as an event stream is a subscription: it has no end of its own to wait for. */
const isSubscription = (req: http.IncomingMessage, res: http.ServerResponse) =>
  req.method === 'GET' && String(res.getHeader('content-type') ?? '').startsWith('text/event-stream');

export function createNodeServer(app: RequestListener, requestTimeoutMs: number): NodeServer {
  const inFlight = new Map<http.ServerResponse, http.IncomingMessage>();
  let draining: (() => void) | undefined;
  const server = http.createServer(
    {
      requestTimeout: requestTimeoutMs,
      headersTimeout: Math.min(requestTimeoutMs, 60_000),
      // How often Node looks for expired requests (30 s by default, coarser than the timeout itself).
      connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(requestTimeoutMs / 4))),
    },
    (req, res) => {
      if (draining) res.setHeader('connection', 'close');
      inFlight.set(res, req);
      const done = () => {
        if (!inFlight.delete(res) || !draining) return;
        server.closeIdleConnections();
        if (inFlight.size === 0) draining();
      };
      // A request is over when its answer is out, not when its client left: a caller that hangs up
      // mid-transfer leaves the handler running on, and the store must outlive it. So an answer whose
      // connection closed first is over once the handler ends it (or, for a subscription, at once).
      res.once('close', () => {
        if (res.writableEnded || isSubscription(req, res)) return done();
        // The client left first: wrapped only now, so an ordinary request pays for one listener and nothing more.
        const end = res.end;
        res.end = function (this: http.ServerResponse, ...args: unknown[]) {
          const result = (end as (...a: unknown[]) => http.ServerResponse).apply(this, args);
          done();
          return result;
        } as typeof res.end;
      });
      app(req, res);
    },
  );
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    // As Node's default handler: answer only while no response of this connection has begun (`_httpMessage` is the in-flight one).
    const inFlight = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
    if (error.code !== 'ECONNRESET' && socket.writable && !inFlight?.headersSent) socket.write(answerFor(error, requestTimeoutMs));
    socket.destroy();
  });
  return {
    server,
    async drain(graceMs) {
      const finished = new Promise<void>((resolve) => (draining = resolve));
      // Stops accepting connections and closes idle ones; resolves once every connection is gone.
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const [res, req] of inFlight) if (isSubscription(req, res)) res.end();
      if (inFlight.size === 0) draining?.();
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([finished, new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)))]);
      clearTimeout(timer);
      server.closeAllConnections();
      await closed;
    },
  };
}
