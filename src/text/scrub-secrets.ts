import { echoForms } from './echo-forms.ts';

/**
 * Removes credential values from a message meant for a caller: each value,
 * and the path and query of any value that is a URL (webhook URLs carry
 * their token there), also as it reads encoded (echo-forms.ts). What a provider or the network says about a request
 * often quotes the request: this runs on every such message.
 */
export function scrubSecrets(message: string, secrets: readonly unknown[]): string {
  let out = message;
  const values: string[] = [];
  const collect = (value: unknown) => {
    if (typeof value === 'string' && value.length >= 3) values.push(...echoForms(value, 3));
    else if (value && typeof value === 'object') Object.values(value).forEach(collect);
  };
  secrets.forEach(collect);
  // Longest first, so a value containing another is replaced whole.
  for (const value of values.sort((a, b) => b.length - a.length)) {
    out = out.split(value).join('[redacted]');
    try {
      const url = new URL(value);
      if (url.pathname.length > 1) for (const form of echoForms(url.pathname, 3)) out = out.split(form).join('/[redacted]');
      if (url.search) out = out.split(url.search).join('');
      if (url.password) out = out.split(url.password).join('[redacted]');
    } catch {
      // not a URL
    }
  }
  return out;
}
