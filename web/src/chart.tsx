import { useEffect, useRef } from 'preact/hooks';
import type uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import type { Bucket } from './api.ts';

/**
 * Runs per time bucket by status, drawn with uPlot (stacked-looking bars are avoided: three clear lines).
 * uPlot is half the app's script and only the overview draws it, so it is its own chunk, loaded when a
 * chart is first drawn: the other pages (the Runs page above all) download half as much before their first paint.
 */

const SERIES = [
  { label: 'Succeeded', stroke: '#1a7f37', key: 'successCount' as const },
  { label: 'Failed', stroke: '#cf222e', key: 'failedCount' as const },
  { label: 'Other (pending, running, …)', stroke: '#0969da', key: 'other' as const },
];

let loaded: typeof uPlot | undefined;

export function RunsChart({ buckets }: { buckets: Bucket[] }) {
  const host = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const element = host.current;
    if (!element) return;
    const xs = buckets.map((b) => Math.floor(Date.parse(b.timestamp) / 1000));
    const data: uPlot.AlignedData = [
      xs,
      ...SERIES.map((s) => buckets.map((b) => (s.key === 'other' ? Math.max(0, b.runCount - b.successCount - b.failedCount) : b[s.key]))),
    ];
    const width = () => Math.max(280, element.clientWidth);
    let plot: uPlot | undefined;
    let gone = false;
    const resize = () => plot?.setSize({ width: width(), height: 260 });
    const draw = (UPlot: typeof uPlot) => {
      plot = new UPlot(
        {
          width: width(),
          height: 260,
          scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, Math.max(1, max)] } },
          axes: [{}, { label: 'Runs' }],
          series: [{}, ...SERIES.map((s) => ({ label: s.label, stroke: s.stroke, width: 2, points: { show: buckets.length < 60 } }))],
        },
        data,
        element,
      );
      addEventListener('resize', resize);
    };
    // Once loaded, a live update redraws at once (no empty frame between the old chart and the new).
    if (loaded) draw(loaded);
    else
      void import('uplot').then(
        ({ default: UPlot }) => {
          loaded = UPlot;
          if (!gone) draw(UPlot);
        },
        () => {
          // The chunk is gone (say the gateway was upgraded under an open page): the figure's text still holds.
          if (!gone) element.textContent = 'The chart could not be loaded; reload the page to draw it.';
        },
      );
    return () => {
      gone = true;
      removeEventListener('resize', resize);
      plot?.destroy();
    };
  }, [buckets]);
  const total = buckets.reduce((n, b) => n + b.runCount, 0);
  return (
    <figure class="chart">
      <div ref={host} role="img" aria-label={`Runs over time by status: ${total} runs in ${buckets.length} intervals`} />
      <figcaption>Runs per interval: succeeded, failed, and other statuses.</figcaption>
    </figure>
  );
}
