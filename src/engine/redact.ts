/** Field names whose values never appear in logs (step inputs are stored and shown to users). */
const SENSITIVE = /(secret|password|passwd|token|api[-_]?key|authorization|private[-_]?key|mnemonic|seed|credential|cookie)/i;

/** Header maps often arrive as JSON text (`httpHeaders`, `webhookHeaders`): redact inside them too. */
function redactJsonText(text: string, depth: number): string {
  const trimmed = text.trim();
  if (!trimmed.startsWith('{')) return text;
  try {
    return JSON.stringify(redactSecrets(JSON.parse(trimmed), depth + 1));
  } catch {
    return text;
  }
}

export function redactSecrets(value: unknown, depth = 0): unknown {
  if (depth > 20) return '[…]';
  if (typeof value === 'string') return redactJsonText(value, depth);
  if (Array.isArray(value)) return value.map((item) => redactSecrets(item, depth + 1));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => [key, SENSITIVE.test(key) && item !== null && item !== '' ? '[REDACTED]' : redactSecrets(item, depth + 1)]),
    );
  }
  return value;
}
