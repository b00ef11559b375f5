import { parse, serialize } from 'cookie';
import { SESSION_TTL_MS } from './sessions.ts';

/**
 * The session cookie: HttpOnly, SameSite=Lax, Path=/, and Secure with the
 * `__Host-` prefix when the gateway is served over HTTPS (browsers then refuse
 * it from any other scheme, host or path).
 */

const isHttps = (baseUrl: string) => baseUrl.startsWith('https:');

export const sessionCookieName = (baseUrl: string) => (isHttps(baseUrl) ? '__Host-flowgate_session' : 'flowgate_session');

export function sessionCookie(baseUrl: string, token: string): string {
  return serialize(sessionCookieName(baseUrl), token, {
    httpOnly: true,
    secure: isHttps(baseUrl),
    sameSite: 'lax',
    path: '/',
    maxAge: Math.floor(SESSION_TTL_MS / 1000),
  });
}

export function clearedSessionCookie(baseUrl: string): string {
  return serialize(sessionCookieName(baseUrl), '', { httpOnly: true, secure: isHttps(baseUrl), sameSite: 'lax', path: '/', maxAge: 0 });
}

/** The session token a `Cookie` header carries, if any. */
export function sessionTokenFrom(cookieHeader: string | undefined, baseUrl: string): string | undefined {
  if (!cookieHeader) return undefined;
  return parse(cookieHeader)[sessionCookieName(baseUrl)] || undefined;
}

/**
 * The sign-up cookie: set by the e-mail sign-up's answer to the browser that asked, holding a digest of the
 * link it mailed (emailSignUpBinding). Following the link opens a session only in a browser holding it: a GET
 * any page can send must not sign a visitor into someone else's new account (login CSRF). Path / because the
 * `__Host-` prefix requires it; it lives as long as the link.
 */
const signUpCookieName = (baseUrl: string) => (isHttps(baseUrl) ? '__Host-flowgate_signup' : 'flowgate_signup');

export function signUpCookie(baseUrl: string, binding: string, maxAgeSeconds: number): string {
  return serialize(signUpCookieName(baseUrl), binding, { httpOnly: true, secure: isHttps(baseUrl), sameSite: 'lax', path: '/', maxAge: maxAgeSeconds });
}

export function signUpBindingFrom(cookieHeader: string | undefined, baseUrl: string): string | undefined {
  if (!cookieHeader) return undefined;
  return parse(cookieHeader)[signUpCookieName(baseUrl)] || undefined;
}
