import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A local server speaking the CAPTCHA providers' siteverify API (Cloudflare
 * Turnstile, hCaptcha and reCAPTCHA share it): POST form-encoded `secret`,
 * `response`, optional `remoteip` → `{success, error-codes}`. It accepts
 * SECRET and any response starting with `pass`, as a solved widget's token.
 */

export const CAPTCHA_SECRET = '0x4AAAAAAAtestsecretkey';

export interface CaptchaServer {
  url: string;
  received: Record<string, string>[];
  close(): Promise<void>;
}

export async function startCaptchaServer(): Promise<CaptchaServer> {
  const received: Record<string, string>[] = [];
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      const form = Object.fromEntries(new URLSearchParams(raw));
      received.push(form);
      const reply = (body: unknown) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      if (req.method !== 'POST' || !String(req.headers['content-type']).startsWith('application/x-www-form-urlencoded')) {
        return reply({ success: false, 'error-codes': ['bad-request'] });
      }
      if (!form.secret) return reply({ success: false, 'error-codes': ['missing-input-secret'] });
      if (form.secret !== CAPTCHA_SECRET) return reply({ success: false, 'error-codes': ['invalid-input-secret'] });
      if (!form.response) return reply({ success: false, 'error-codes': ['missing-input-response'] });
      if (!form.response.startsWith('pass')) return reply({ success: false, 'error-codes': ['invalid-input-response'] });
      reply({ success: true, challenge_ts: new Date().toISOString(), hostname: 'localhost', 'error-codes': [] });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/siteverify`,
    received,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
