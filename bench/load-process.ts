/**
 * The benchmark's load generator, run as its own process (like an external
 * load generator such as k6) so the client's work never shares the gateway's
 * event loop or is counted in the gateway's CPU time. It drives autocannon's
 * closed loop: each of `connections` connections sends its next request when
 * the previous answer arrives.
 *
 * A spec is one request, optionally followed by a second one built from the
 * first answer (`followUp`): e.g. POST execute, then GET wait on the
 * `executionId` it returned, expecting `status: "success"`. A pair counts as
 * one sample (`samplesPerSecond`).
 *
 * Protocol: argv[2] is a JSON LoadSpec; the process sends `{ready}` after the
 * warm-up (the parent starts its CPU clock then) and then a LoadResult.
 */
import autocannon from 'autocannon';

export interface LoadRequest {
  method?: 'GET' | 'POST';
  path: string;
  headers?: Record<string, string>;
  body?: string;
  /** Without a follow-up: an answer without this field value counts as a failure. */
  expect?: { field: string; equals: string };
}

export interface LoadSpec {
  url: string;
  connections: number;
  warmupSeconds: number;
  durationSeconds: number;
  request: LoadRequest;
  followUp?: {
    /** `path` with `{capture}` replaced by that field of the first answer. */
    path: string;
    capture: string;
    /** A follow-up answer without this field value counts as a failure. */
    expect?: { field: string; equals: string };
  };
}

export interface LoadResult {
  requests: number;
  /** Requests per second, or pairs per second with a followUp. */
  samplesPerSecond: number;
  p50: number;
  p99: number;
  /** Non-2xx answers, connection errors and follow-ups without the expected value. */
  failures: number;
  /** This process's CPU per sample over the run, in ms: what the load generator itself spends (it shares the machine). */
  loadCpuMsPerSample: number;
}

/** A 2xx answer whose `field` is not `equals` is a failure (a non-2xx one is counted by autocannon). */
function expectField(status: number, body: string, expect: { field: string; equals: string }, failed: () => void) {
  if (status >= 200 && status < 300 && (JSON.parse(body) as Record<string, unknown>)[expect.field] !== expect.equals) failed();
}

/** What a connection remembers between the two requests of a pair. */
type PairContext = { captured?: unknown };

function requestsFor(spec: LoadSpec, failed: () => void): autocannon.Request[] {
  const { request, followUp } = spec;
  const first: autocannon.Request = { method: request.method ?? 'GET', path: request.path, headers: request.headers, body: request.body };
  if (!followUp) return [request.expect ? { ...first, onResponse: (status, body) => expectField(status, body, request.expect!, failed) } : first];
  return [
    {
      ...first,
      onResponse: (status, body, context: PairContext) => {
        context.captured = status >= 200 && status < 300 ? (JSON.parse(body) as Record<string, unknown>)[followUp.capture] : undefined;
      },
    },
    {
      method: 'GET',
      headers: request.headers,
      // Nothing captured (the first request failed): start the pair again.
      setupRequest: (next, context: PairContext) =>
        (typeof context.captured === 'string'
          ? { ...next, path: followUp.path.replace(`{${followUp.capture}}`, context.captured) }
          : (failed(), undefined)) as autocannon.Request,
      onResponse: (status, body) => {
        if (followUp.expect) expectField(status, body, followUp.expect, failed);
      },
    },
  ];
}

async function run(spec: LoadSpec, seconds: number): Promise<LoadResult> {
  let failures = 0;
  const cpuAtStart = process.cpuUsage();
  const result = await autocannon({ url: spec.url, connections: spec.connections, duration: seconds, requests: requestsFor(spec, () => failures++) });
  const cpu = process.cpuUsage(cpuAtStart);
  const samplesPerSecond = result.requests.total / seconds / (spec.followUp ? 2 : 1);
  return {
    requests: result.requests.total,
    samplesPerSecond,
    loadCpuMsPerSample: (cpu.user + cpu.system) / 1000 / Math.max(samplesPerSecond * seconds, 1),
    p50: result.latency.p50,
    p99: result.latency.p99,
    failures: failures + result.non2xx + result.errors,
  };
}

const spec = JSON.parse(process.argv[2]!) as LoadSpec;
await run(spec, spec.warmupSeconds);
process.send!({ ready: true });
process.send!(await run(spec, spec.durationSeconds));
process.exit(0);
