import { describe, expect, it } from 'vitest';
import { redactSecrets } from '../src/engine/redact.ts';

describe('log redaction', () => {
  it('hides secret-looking fields, also inside JSON header strings, and keeps the rest', () => {
    const redacted = redactSecrets({
      endpoint: 'https://api.example.com',
      apiKey: 'sk-live-123',
      nested: { password: 'hunter2', user: 'alice' },
      httpHeaders: JSON.stringify({ Authorization: 'Bearer abc', Accept: 'application/json' }),
      list: [{ privateKey: '0xdead' }],
    }) as Record<string, any>;
    expect(redacted.apiKey).toBe('[REDACTED]');
    expect(redacted.nested).toEqual({ password: '[REDACTED]', user: 'alice' });
    expect(JSON.parse(redacted.httpHeaders)).toEqual({ Authorization: '[REDACTED]', Accept: 'application/json' });
    expect(redacted.list[0].privateKey).toBe('[REDACTED]');
    expect(redacted.endpoint).toBe('https://api.example.com');
    expect(JSON.stringify(redacted)).not.toMatch(/sk-live|hunter2|Bearer abc|0xdead/);
  });
});
