import type { Config, CaptchaConfig } from '../config.ts';
import { ServiceError } from '../errors.ts';
import { safeFetch } from '../net/safe-fetch.ts';

/**
 * The CAPTCHA in front of e-mail sign-up: off unless FLOWGATE_CAPTCHA_PROVIDER
 * names one. The widget's answer arrives in the `x-captcha-response` header
 * (the name better-auth and the provider examples use) or the body's
 * `captchaToken`, and is checked with the provider's siteverify API
 * (form-encoded `secret`, `response`, `remoteip` → `{success, error-codes}`),
 * which Cloudflare Turnstile, hCaptcha and reCAPTCHA share. Fails closed: a
 * provider that does not answer usably refuses the sign-up.
 */

export const SITEVERIFY_URLS: Record<CaptchaConfig['provider'], string> = {
  turnstile: 'https://challenges.cloudflare.com/turnstile/v0/siteverify',
  hcaptcha: 'https://api.hcaptcha.com/siteverify',
  recaptcha: 'https://www.google.com/recaptcha/api/siteverify',
};

export const CAPTCHA_HEADER = 'x-captcha-response';

const VERIFY_TIMEOUT_MS = 10_000;

export async function requireCaptcha(config: Config, response: string | undefined, ip: string): Promise<void> {
  const captcha = config.captcha;
  if (!captcha) return;
  if (!response?.trim()) {
    throw new ServiceError(400, 'MISSING_RESPONSE', 'Missing CAPTCHA response', { message: 'Missing CAPTCHA response' });
  }
  const form = new URLSearchParams({ secret: captcha.secret, response: response.trim() });
  if (ip && ip !== 'unknown') form.set('remoteip', ip.replace(/^::ffff:/, ''));
  let result: { success?: unknown; 'error-codes'?: unknown };
  try {
    const res = await safeFetch(captcha.verifyUrl ?? SITEVERIFY_URLS[captcha.provider], {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: form.toString(),
      timeoutMs: VERIFY_TIMEOUT_MS,
      maxResponseBytes: 64 * 1024,
      allowList: config.httpAllowHosts,
    });
    if (res.status < 200 || res.status >= 300) throw new Error(`siteverify answered HTTP ${res.status}`);
    result = JSON.parse(res.body.toString('utf8'));
  } catch (error) {
    console.error(`[flowgate] CAPTCHA verification with ${captcha.provider} failed: ${error instanceof Error ? error.message : String(error)}`);
    throw new ServiceError(503, 'captcha_unavailable', 'The CAPTCHA could not be checked just now; try again in a few minutes.');
  }
  if (result.success !== true) {
    const codes = Array.isArray(result['error-codes']) ? result['error-codes'].filter((c): c is string => typeof c === 'string').slice(0, 5) : [];
    throw new ServiceError(400, 'captcha_failed', 'The CAPTCHA response was not accepted; solve the challenge again.', { errorCodes: codes });
  }
}
