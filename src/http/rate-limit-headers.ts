import type { Response } from 'express';
import { rateLimitHeaders, type RateLimitDecision } from '../guards/rate-limit.ts';

export function setRateLimitHeaders(res: Response, decision: RateLimitDecision): void {
  res.set(rateLimitHeaders(decision));
}
