import type { NextFunction, Request, RequestHandler, Response } from 'express';

/**
 * Runs `handlers` one after another as one middleware, with express 5's
 * contract for each (a thrown error or a rejected promise is `next(error)`;
 * an error skips the rest and goes on to the error renderer), but without a
 * router layer per handler: express's router matches a path, trims and
 * restores the URL and allocates for every layer a request passes, which at
 * a dozen app-level handlers cost more than most of them do (README
 * "Static answers and the router gate").
 */
export function inSequence(handlers: readonly RequestHandler[]): RequestHandler {
  return (req: Request, res: Response, done: NextFunction) => {
    let index = 0;
    const next = (error?: unknown) => {
      // As in express: `next('router')` leaves (the sequence is one layer of the app), `next('route')` from a middleware goes on.
      if (error === 'router') return done();
      if (error && error !== 'route') return done(error);
      const handler = handlers[index++];
      if (!handler) return done();
      try {
        const result: unknown = handler(req, res, next);
        if (result instanceof Promise) result.catch((reason: unknown) => done(reason ?? new Error('Rejected promise')));
      } catch (thrown) {
        done(thrown);
      }
    };
    next();
  };
}
