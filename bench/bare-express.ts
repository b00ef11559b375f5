import express from 'express';

/** The anchor every edge row is compared with: the smallest express JSON route, at `/bare`. One definition, so every bench measures the same one. */
export function bareExpressApp(): express.Express {
  const bare = express();
  const payload = { ok: true, chains: [{ chainId: 1, name: 'Ethereum' }] };
  bare.get('/bare', (_req, res) => res.json(payload));
  return bare;
}
