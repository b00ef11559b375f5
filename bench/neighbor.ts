import { externalLoad, type MeasuredLoad } from './external-load.ts';
import { forEachGraph } from './graphs.ts';

/**
 * The noisy neighbour: how long anyone's request waits while one tenant keeps the engine busy with
 * inline work (For Each over 1,000 items with a math/aggregate body: steps that run on the event loop, not in
 * the sandbox). The quiet caller is one connection asking GET /api/chains back to back; its anchor is the same
 * probe against the same gateway with nothing else running, measured in the same run. Both sides come from
 * load-generator processes of their own. Before issue 18's thirteenth pass (src/engine/turn-share.ts), a turn
 * of the event loop carried a stretch of every looping run, and the probe waited behind all of them.
 */

export interface NeighborRows {
  idle: MeasuredLoad;
  beside: MeasuredLoad;
  busy: MeasuredLoad;
  busyConnections: number;
  items: number;
}

const ITEMS = 1000;

export async function measureNeighbor(
  gatewayUrl: string,
  auth: Record<string, string>,
  durationSeconds: number,
  busyConnections: number,
): Promise<NeighborRows> {
  const created = await fetch(`${gatewayUrl}/api/workflows/create`, {
    method: 'POST',
    headers: auth,
    body: JSON.stringify({
      name: `For Each over ${ITEMS} items (the busy tenant)`,
      ...forEachGraph(),
    }),
  });
  if (!created.ok) throw new Error(`the busy tenant's workflow was refused: ${await created.text()}`);
  const { id } = (await created.json()) as { id: string };

  const probe = (seconds: number) =>
    externalLoad({ url: gatewayUrl, connections: 1, warmupSeconds: 1, durationSeconds: seconds, request: { path: '/api/chains' } });
  const idle = await probe(durationSeconds);
  // The busy tenant's load starts first and outlasts the probe, so the probe is measured against it throughout.
  const busyLoad = externalLoad({
    url: gatewayUrl,
    connections: busyConnections,
    warmupSeconds: 2,
    durationSeconds: durationSeconds + 2,
    request: {
      method: 'POST',
      path: `/api/workflows/${id}/execute`,
      headers: auth,
      body: JSON.stringify({ input: { items: Array.from({ length: ITEMS }, (_, i) => i) } }),
    },
    followUp: { path: '/api/workflows/executions/{executionId}/wait', capture: 'executionId', expect: { field: 'status', equals: 'success' } },
  });
  await new Promise((resolve) => setTimeout(resolve, 2000));
  const beside = await probe(durationSeconds);
  const busy = await busyLoad;
  return { idle, beside, busy, busyConnections, items: ITEMS };
}

export function printNeighbor(rows: NeighborRows): void {
  console.log(
    `\nNoisy neighbour: a quiet caller's GET /api/chains (1 connection, back to back) while one tenant keeps ${rows.busyConnections} connections of For Each runs over ${rows.items} items going (execute + wait)\n`,
  );
  console.log('| quiet caller | req/s | p50 ms | p99 ms | failures |');
  console.log('|---|---:|---:|---:|---:|');
  for (const [name, load] of [
    ['idle gateway (anchor)', rows.idle],
    ['beside the busy tenant', rows.beside],
  ] as const) {
    console.log(`| ${name} | ${load.samplesPerSecond.toFixed(0)} | ${load.p50} | ${load.p99} | ${load.failures} |`);
  }
  console.log(
    `\nThe busy tenant meanwhile: ${rows.busy.samplesPerSecond.toFixed(1)} runs/s, p50 ${rows.busy.p50} ms, p99 ${rows.busy.p99} ms per request, ${rows.busy.failures} failures`,
  );
}
