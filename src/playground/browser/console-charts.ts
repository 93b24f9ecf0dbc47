import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

/**
 * The console's Usage page draws its charts here from the figures the page carries in
 * `data-usage` (the same numbers as its tables, read through the `usage` query). No inline
 * script: the page's CSP allows only scripts from our own origin.
 */
interface UsageFigures {
  days: Array<{ date: string; successful: number; clientErrors: number; serverErrors: number }>;
  perMonth: number | null;
}

const DAY_SECONDS = 86_400;

function widthOf(element: HTMLElement): number {
  return Math.max(320, Math.min(element.clientWidth || 720, 960));
}

/** Calls per day by outcome. */
function perDay(element: HTMLElement, usage: UsageFigures): uPlot {
  const x = usage.days.map((d) => Date.parse(`${d.date}T00:00:00Z`) / 1000);
  return new uPlot(
    {
      title: 'Calls per day (UTC)',
      width: widthOf(element),
      height: 260,
      scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, Math.max(5, max * 1.1)] } },
      series: [
        {},
        { label: '2xx/3xx', stroke: '#1f7a4d', width: 2, points: { show: true } },
        { label: '4xx', stroke: '#b7791f', width: 2, points: { show: true } },
        { label: '5xx', stroke: '#c53030', width: 2, points: { show: true } },
      ],
      axes: [{ incrs: [DAY_SECONDS, 7 * DAY_SECONDS] }, {}],
    },
    [
      x,
      usage.days.map((d) => d.successful),
      usage.days.map((d) => d.clientErrors),
      usage.days.map((d) => d.serverErrors),
    ],
    element,
  );
}

/** Calls so far this calendar month, day by day, against the monthly quota. */
function againstQuota(element: HTMLElement, usage: UsageFigures): uPlot {
  const month = new Date().toISOString().slice(0, 7);
  const days = usage.days.filter((d) => d.date.startsWith(month));
  let total = 0;
  const cumulative = days.map((d) => (total += d.successful + d.clientErrors + d.serverErrors));
  const quota = usage.perMonth;
  const series: uPlot.Series[] = [{}, { label: 'Calls this month', stroke: '#2b6cb0', width: 2 }];
  const data: uPlot.AlignedData = [days.map((d) => Date.parse(`${d.date}T00:00:00Z`) / 1000), cumulative];
  if (quota !== null) {
    series.push({ label: 'Monthly quota', stroke: '#718096', width: 1, dash: [6, 4] });
    data.push(days.map(() => quota));
  }
  return new uPlot(
    {
      title: 'This month against the quota',
      width: widthOf(element),
      height: 220,
      scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, Math.max(5, max * 1.1)] } },
      series,
      axes: [{ incrs: [DAY_SECONDS, 7 * DAY_SECONDS] }, {}],
    },
    data,
    element,
  );
}

function draw(): void {
  const source = document.querySelector<HTMLElement>('[data-usage]');
  if (!source) return;
  const usage = JSON.parse(source.dataset.usage ?? '{}') as UsageFigures;
  const daily = document.getElementById('chart-per-day');
  const quota = document.getElementById('chart-quota');
  const charts: uPlot[] = [];
  if (daily) charts.push(perDay(daily, usage));
  if (quota) charts.push(againstQuota(quota, usage));
  // The page tells tests (and anyone curious) that the charts are drawn.
  source.dataset.drawn = String(charts.length);
}

if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', draw);
else draw();
