'use client';
/**
 * The overview's history (docs/dashboard.md, "History"): over 1 h, 24 h, 7 d or 90 d, for every
 * queue or one, what finished per interval, the failure rate, the oldest ready job's age and
 * live work, each a chart, and every number as text in one table for screen readers (and
 * anyone who wants the figures).
 */
import { useQuery } from '@tanstack/react-query';
import { useId, useState } from 'react';
import {
  Bar,
  BarChart,
  CartesianGrid,
  Legend,
  Line,
  LineChart,
  ResponsiveContainer,
  Tooltip,
  XAxis,
  YAxis,
} from 'recharts';
import type { HistoryDTO, HistoryPointDTO } from '../lib/dto.ts';
import { fetchHistory, poll, POLL, queryKeys } from './queries.ts';
import { TableScroll } from './table-scroll.tsx';
import { AXIS, TOOLTIP, age, legendText } from './chart-theme.tsx';
import { useTimeLabels } from './time.tsx';
import { dayLabel } from '../lib/time-format.ts';

const RANGES = [
  { key: '1h', label: '1 hour', per: 'minute' },
  { key: '24h', label: '24 hours', per: '15 minutes' },
  { key: '7d', label: '7 days', per: 'hour' },
  { key: '90d', label: '90 days', per: 'day (UTC)' },
] as const;
type Range = (typeof RANGES)[number]['key'];

const OUTCOMES = [
  { key: 'done', label: 'done', color: 'var(--chart-done)' },
  { key: 'dead', label: 'dead', color: 'var(--chart-dead)' },
  { key: 'cancelled', label: 'cancelled', color: 'var(--chart-cancelled)' },
] as const;

const LIVE = [
  { key: 'ready', label: 'ready', color: 'var(--chart-ready)' },
  { key: 'scheduled', label: 'scheduled', color: 'var(--chart-scheduled)' },
  { key: 'retrying', label: 'retrying', color: 'var(--chart-retrying)' },
  { key: 'running', label: 'running', color: 'var(--chart-running)' },
  { key: 'leaseExpired', label: 'lease expired', color: 'var(--chart-expired)' },
] as const;

const percent = (rate: number | null) => (rate === null ? '—' : `${(rate * 100).toFixed(1)} %`);
const count = (n: number | null) => (n === null ? '—' : n.toLocaleString('en-US'));

export function HistorySection({ queues }: { queues: string[] }) {
  const [range, setRange] = useState<Range>('1h');
  const [queue, setQueue] = useState<string | null>(null);
  const queueId = useId();
  const { data, error } = useQuery({
    queryKey: queryKeys.history(range, queue),
    queryFn: () => fetchHistory(range, queue),
    refetchInterval: poll(range === '1h' ? POLL.historyHour : POLL.historyLonger),
  });
  const per = RANGES.find((r) => r.key === range)?.per ?? 'interval';
  return (
    <section data-testid="history">
      <h2>History</h2>
      <div className="history-controls">
        <div role="group" aria-label="History range">
          {RANGES.map((r) => (
            <button
              key={r.key}
              type="button"
              aria-pressed={range === r.key}
              className={range === r.key ? 'selected' : undefined}
              onClick={() => setRange(r.key)}
            >
              {r.label}
            </button>
          ))}
        </div>
        <label htmlFor={queueId}>Queue</label>
        <select
          id={queueId}
          value={queue ?? ''}
          onChange={(e) => setQueue(e.target.value === '' ? null : e.target.value)}
        >
          <option value="">every queue</option>
          {queues.map((q) => (
            <option key={q} value={q}>
              {q}
            </option>
          ))}
        </select>
      </div>
      {error && (
        <p className="error" role="alert">
          Could not load the history: {error.message}
        </p>
      )}
      {data ? <HistoryCharts data={data} per={per} /> : !error && <p>Loading…</p>}
    </section>
  );
}

function HistoryCharts({ data, per }: { data: HistoryDTO; per: string }) {
  const tableId = useId();
  const labels = useTimeLabels();
  // An interval's label in the viewer's zone: its time of day, with the day over days. A day is
  // a UTC day (the buckets are whole UTC days): labelled in UTC, or it would name the wrong day
  // west of Greenwich.
  const intervalLabel = (at: string) =>
    data.bucketSeconds >= 86_400
      ? dayLabel(at, 'UTC')
      : data.bucketSeconds >= 3600
        ? `${labels.day(at)} ${labels.timeOfDay(at)}`
        : labels.timeOfDay(at);
  const rows = data.points.map((p) => ({
    ...p,
    label: intervalLabel(p.at),
    failurePercent: p.failureRate === null ? null : Math.round(p.failureRate * 1000) / 10,
  }));
  const scope = data.queue === null ? 'every queue' : `queue ${data.queue}`;
  const said = summaries(data, scope);
  return (
    <>
      <div className="two">
        <HistoryFigure
          testId="chart-history-outcomes"
          title={`Finished per ${per}`}
          summary={said.outcomes}
          tableId={tableId}
        >
          <BarChart data={rows}>
            <CartesianGrid strokeDasharray="3 3" stroke="var(--chart-grid)" />
            <XAxis dataKey="label" minTickGap={30} {...AXIS} />
            <YAxis allowDecimals={false} {...AXIS} />
            <Tooltip {...TOOLTIP} />
            <Legend formatter={legendText} />
            {OUTCOMES.map((o) => (
              <Bar key={o.key} dataKey={o.key} name={o.label} stackId="o" fill={o.color} isAnimationActive={false} />
            ))}
          </BarChart>
        </HistoryFigure>
        <HistoryFigure
          testId="chart-history-failure-rate"
          title="Failure rate"
          summary={said.failureRate}
          tableId={tableId}
        >
          <LineChart data={rows}>
            <CartesianGrid strokeDasharray="3 3" stroke="var(--chart-grid)" />
            <XAxis dataKey="label" minTickGap={30} {...AXIS} />
            <YAxis unit=" %" domain={[0, 100]} {...AXIS} />
            <Tooltip {...TOOLTIP} />
            <Line
              dataKey="failurePercent"
              name="failure rate (%)"
              stroke="var(--chart-dead)"
              dot={{ r: 2 }}
              isAnimationActive={false}
            />
          </LineChart>
        </HistoryFigure>
      </div>
      <div className="two">
        <HistoryFigure testId="chart-history-lag" title="Oldest ready job’s age" summary={said.lag} tableId={tableId}>
          <LineChart data={rows}>
            <CartesianGrid strokeDasharray="3 3" stroke="var(--chart-grid)" />
            <XAxis dataKey="label" minTickGap={30} {...AXIS} />
            <YAxis tickFormatter={(s: number) => age(s)} {...AXIS} />
            <Tooltip {...TOOLTIP} formatter={(v) => (typeof v === 'number' ? age(v) : String(v))} />
            <Line
              dataKey="oldestReadySeconds"
              name="oldest ready"
              stroke="var(--chart-ready)"
              dot={{ r: 2 }}
              isAnimationActive={false}
            />
          </LineChart>
        </HistoryFigure>
        <HistoryFigure testId="chart-history-live" title="Live work" summary={said.live} tableId={tableId}>
          <LineChart data={rows}>
            <CartesianGrid strokeDasharray="3 3" stroke="var(--chart-grid)" />
            <XAxis dataKey="label" minTickGap={30} {...AXIS} />
            <YAxis allowDecimals={false} {...AXIS} />
            <Tooltip {...TOOLTIP} />
            <Legend formatter={legendText} />
            {LIVE.map((l) => (
              <Line
                key={l.key}
                dataKey={l.key}
                name={l.label}
                stroke={l.color}
                dot={{ r: 2 }}
                isAnimationActive={false}
              />
            ))}
          </LineChart>
        </HistoryFigure>
      </div>
      <p className="muted" data-testid="history-zone">
        Times in {labels.zone}
        {data.bucketSeconds >= 86_400 ? '; days are UTC days' : ''}.
      </p>
      <HistoryTable id={tableId} rows={rows} scope={scope} />
    </>
  );
}

/** Each chart's sentence: the range's totals, what a screen reader reads before the table. */
function summaries(data: HistoryDTO, scope: string) {
  const totals = data.points.reduce(
    (t, p) => ({
      done: t.done + p.done,
      dead: t.dead + p.dead,
      cancelled: t.cancelled + p.cancelled,
      failed: t.failed + p.failedAttempts,
    }),
    { done: 0, dead: 0, cancelled: 0, failed: 0 },
  );
  const overall = totals.failed + totals.done === 0 ? null : totals.failed / (totals.failed + totals.done);
  const worstAge = data.points.reduce<number | null>(
    (m, p) => (p.oldestReadySeconds === null ? m : Math.max(m ?? 0, p.oldestReadySeconds)),
    null,
  );
  const last = data.points.findLast((p) => p.ready !== null);
  return {
    outcomes: `${scope}: ${count(totals.done)} done, ${count(totals.dead)} dead, ${count(totals.cancelled)} cancelled in this range.`,
    failureRate: `${scope}: ${count(totals.failed)} failed attempts, a failure rate of ${percent(overall)} over the range.`,
    lag: `${scope}: the oldest due ready job waited at most ${age(worstAge)} in this range${last ? `; ${age(last.oldestReadySeconds)} at the last sample` : ''}.`,
    live: last
      ? `${scope} at the last sample: ${LIVE.map((l) => `${count(last[l.key])} ${l.label}`).join(', ')}.`
      : `${scope}: no sample of live work in this range (no worker ran the maintenance).`,
  };
}

function HistoryFigure(props: {
  testId: string;
  title: string;
  summary: string;
  tableId: string;
  children: React.ReactElement;
}) {
  return (
    <figure className="history-figure" data-testid={props.testId} aria-describedby={props.tableId}>
      <figcaption>
        <h3>{props.title}</h3>
        <p className="muted" data-testid={`${props.testId}-summary`}>
          {props.summary}
        </p>
      </figcaption>
      <div className="chart">
        <ResponsiveContainer width="100%" height={220}>
          {props.children}
        </ResponsiveContainer>
      </div>
    </figure>
  );
}

type Row = HistoryPointDTO & { label: string };

function HistoryTable({ id, rows, scope }: { id: string; rows: Row[]; scope: string }) {
  return (
    <details className="history-numbers" data-testid="history-numbers">
      <summary>The numbers behind these charts</summary>
      <TableScroll label="History, interval by interval">
        <table id={id}>
          <caption>History of {scope}, interval by interval (— where no sample was taken)</caption>
          <thead>
            <tr>
              <th scope="col">interval from</th>
              {OUTCOMES.map((o) => (
                <th key={o.key} scope="col">
                  {o.label}
                </th>
              ))}
              <th scope="col">failed attempts</th>
              <th scope="col">failure rate</th>
              <th scope="col">oldest ready</th>
              {LIVE.map((l) => (
                <th key={l.key} scope="col">
                  {l.label}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {rows.map((r) => (
              <tr key={r.at} data-at={r.at}>
                <th scope="row">{r.label}</th>
                {OUTCOMES.map((o) => (
                  <td key={o.key} className="num" data-key={o.key}>
                    {count(r[o.key])}
                  </td>
                ))}
                <td className="num" data-key="failedAttempts">
                  {count(r.failedAttempts)}
                </td>
                <td className="num" data-key="failureRate">
                  {percent(r.failureRate)}
                </td>
                <td className="num" data-key="oldestReadySeconds">
                  {age(r.oldestReadySeconds)}
                </td>
                {LIVE.map((l) => (
                  <td key={l.key} className="num" data-key={l.key}>
                    {count(r[l.key])}
                  </td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      </TableScroll>
    </details>
  );
}
