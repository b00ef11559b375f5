import { parse, serialize } from 'cookie';
import { SESSION_TTL_MS } from './sessions.ts';

const isHttps = (baseUrl: string) => baseUrl.startsWith('https:');

/**
 * One of the gateway's cookies (the session, the sign-up): HttpOnly, SameSite=Lax, Path=/, and Secure with the
 * `__Host-` prefix when the gateway is served over HTTPS (browsers then refuse it from any other scheme, host or path).
 */
function hostCookie(name: string) {
  const nameFor = (baseUrl: string) => (isHttps(baseUrl) ? `__Host-${name}` : name);
  return {
    nameFor,
    set: (baseUrl: string, value: string, maxAgeSeconds: number) =>
      serialize(nameFor(baseUrl), value, { httpOnly: true, secure: isHttps(baseUrl), sameSite: 'lax', path: '/', maxAge: maxAgeSeconds }),
    from: (cookieHeader: string | undefined, baseUrl: string) => (cookieHeader ? parse(cookieHeader)[nameFor(baseUrl)] || undefined : undefined),
  };
}

const session = hostCookie('flowgate_session');

export const sessionCookieName = session.nameFor;

export const sessionCookie = (baseUrl: string, token: string): string => session.set(baseUrl, token, Math.floor(SESSION_TTL_MS / 1000));

export const clearedSessionCookie = (baseUrl: string): string => session.set(baseUrl, '', 0);

/** The session token a `Cookie` header carries, if any. */
export const sessionTokenFrom: (cookieHeader: string | undefined, baseUrl: string) => string | undefined = session.from;

/**
 * The sign-up cookie: set by the e-mail sign-up's answer to the browser that asked, holding a digest of the
 * link it mailed (emailSignUpBinding). Following the link opens a session only in a browser holding it: a GET
 * any page can send must not sign a visitor into someone else's new account (login CSRF). It lives as long as
 * the link.
 */
const signUp = hostCookie('flowgate_signup');

export const signUpCookie = (baseUrl: string, binding: string, maxAgeSeconds: number): string => signUp.set(baseUrl, binding, maxAgeSeconds);

export const signUpBindingFrom: (cookieHeader: string | undefined, baseUrl: string) => string | undefined = signUp.from;
