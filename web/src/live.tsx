import { useEffect, useRef, useState } from 'preact/hooks';
import type { Summary } from './api.ts';

/**
 * The analytics stream (SPEC Events 1): a `{type: 'summary', data}` event
 * whenever the figures change. EventSource reconnects by itself and sends
 * Last-Event-ID, so a dropped connection resumes without a replay.
 */
export function useSummaryStream(range: string, onSummary: (summary: Summary) => void): 'connecting' | 'live' | 'offline' {
  const [state, setState] = useState<'connecting' | 'live' | 'offline'>('connecting');
  const handler = useRef(onSummary);
  handler.current = onSummary;
  useEffect(() => {
    if (typeof EventSource === 'undefined') return setState('offline');
    const source = new EventSource(`/api/analytics/stream?range=${encodeURIComponent(range)}`);
    source.onopen = () => setState('live');
    source.onerror = () => setState(source.readyState === EventSource.CLOSED ? 'offline' : 'connecting');
    source.onmessage = (event) => {
      try {
        const message = JSON.parse(event.data) as { type?: string; data?: Summary };
        if (message.type === 'summary' && message.data) handler.current(message.data);
      } catch {
        // A malformed event is skipped; the next one carries the whole summary again.
      }
    };
    return () => source.close();
  }, [range]);
  return state;
}

export const LiveBadge = ({ state }: { state: 'connecting' | 'live' | 'offline' }) => (
  <span class={`live ${state}`} role="status">
    {state === 'live' ? 'Live' : state === 'connecting' ? 'Connecting…' : 'Not live (reload to retry)'}
  </span>
);
