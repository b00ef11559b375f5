/**
 * What makes a JSON-RPC 2.0 message, checked before the SDK sees it: the SDK
 * answered valid JSON that is no message (no `jsonrpc`, a numeric `method`,
 * array `params`) with -32700 Parse error, where JSON-RPC says -32600 Invalid
 * Request, and without saying which field was wrong.
 */
export function envelopeProblem(message: unknown): string | undefined {
  if (typeof message !== 'object' || message === null || Array.isArray(message)) return 'a JSON-RPC message is a JSON object';
  const m = message as Record<string, unknown>;
  if (m.jsonrpc !== '2.0') return `"jsonrpc" must be "2.0" (got ${m.jsonrpc === undefined ? 'nothing' : JSON.stringify(m.jsonrpc)})`;
  if ('id' in m && typeof m.id !== 'string' && typeof m.id !== 'number') return '"id" must be a string or a number';
  if ('method' in m) {
    if (typeof m.method !== 'string') return '"method" must be a string';
    if ('params' in m && (typeof m.params !== 'object' || m.params === null || Array.isArray(m.params)))
      return '"params" must be an object (MCP takes named parameters)';
    return undefined;
  }
  if ('result' in m || 'error' in m) return undefined;
  return 'a message needs "method" (a request or notification), or "result" or "error" (a response)';
}

/** The id to answer a refused message with: its own when it is a valid one, else null. */
export const answerIdOf = (message: unknown): string | number | null => {
  const id = typeof message === 'object' && message !== null ? (message as { id?: unknown }).id : undefined;
  return typeof id === 'string' || typeof id === 'number' ? id : null;
};
