'use client';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useRef, useState, type FormEvent } from 'react';
import { Bar, BarChart, CartesianGrid, Legend, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts';
import type { OverviewDTO, QueueAlertDTO, QueueDTO } from '../lib/dto.ts';
import { fetchOverview, poll, POLL, postJson, queryKeys } from './queries.ts';
import { withBasePath } from './base-path.ts';
import { ALERT_LABEL } from './queue-alerts.tsx';
import { TableScroll } from './table-scroll.tsx';
import { AXIS, TOOLTIP, age, legendText } from './chart-theme.tsx';
import { HistorySection } from './history.tsx';
import { Time } from './time.tsx';
import { DialogFormEnd, ReasonField } from './dialog-form.tsx';
import { ModalDialog } from './modal-dialog.tsx';

const STATES: { key: keyof QueueDTO; label: string; color: string }[] = [
  { key: 'ready', label: 'ready', color: 'var(--chart-ready)' },
  { key: 'scheduled', label: 'scheduled', color: 'var(--chart-scheduled)' },
  { key: 'retrying', label: 'retrying', color: 'var(--chart-retrying)' },
  { key: 'running', label: 'running', color: 'var(--chart-running)' },
  { key: 'leaseExpired', label: 'lease expired', color: 'var(--chart-expired)' },
  { key: 'dead', label: 'dead', color: 'var(--chart-dead)' },
  { key: 'cancelled', label: 'cancelled', color: 'var(--chart-cancelled)' },
  { key: 'doneLastHour', label: 'done (last hour)', color: 'var(--chart-done)' },
];

export function OverviewPanel() {
  const { data, error, isPending } = useQuery({
    queryKey: queryKeys.overview,
    queryFn: fetchOverview,
    refetchInterval: poll(POLL.overview),
  });
  if (isPending) return <p>Loading…</p>;
  if (error)
    return (
      <p className="error" role="alert">
        Could not load the overview: {error.message}
      </p>
    );
  return <OverviewView data={data} />;
}

function OverviewView({ data }: { data: OverviewDTO }) {
  const client = useQueryClient();
  const [message, setMessage] = useState<string | null>(null);
  const toggle = async (queue: string, paused: boolean, reason: string) => {
    const result = await postJson(
      `/api/queues/${encodeURIComponent(queue)}/${paused ? 'resume' : 'pause'}`,
      reason ? { reason } : {},
    );
    setMessage(result.message ?? null);
    await client.invalidateQueries({ queryKey: queryKeys.overview });
  };
  return (
    <div className="overview">
      <p className="muted">
        Updated <Time at={data.generatedAt} /> · refreshes every {POLL.overview / 1000} s
      </p>
      {message && (
        <p className="notice" role="status">
          {message}
        </p>
      )}

      <BacklogSection data={data} onToggle={toggle} />
      <HistorySection queues={data.queues.map((q) => q.queue)} />

      <div className="two">
        <AttemptsSection attempts={data.attempts} />
        <FailureClassesSection data={data} />
      </div>

      <WorkersSection workers={data.workers} />
    </div>
  );
}

type Toggle = (queue: string, paused: boolean, reason: string) => Promise<void>;

/** Live work apart from outcomes: a few hundred done jobs must not hide a growing ready backlog. */
const LIVE_STATES = new Set<keyof QueueDTO>(['ready', 'scheduled', 'retrying', 'running', 'leaseExpired']);

function QueueChart(props: { testId: string; title: string; states: typeof STATES; queues: QueueDTO[] }) {
  return (
    <figure className="history-figure">
      <figcaption>
        <h3>{props.title}</h3>
      </figcaption>
      {/* The same counts are in the table below, per queue. */}
      <div className="chart" data-testid={props.testId}>
        <ResponsiveContainer width="100%" height={240}>
          <BarChart data={props.queues}>
            <CartesianGrid strokeDasharray="3 3" stroke="var(--chart-grid)" />
            <XAxis dataKey="queue" {...AXIS} />
            <YAxis allowDecimals={false} {...AXIS} />
            <Tooltip {...TOOLTIP} />
            <Legend formatter={legendText} />
            {props.states.map((st) => (
              <Bar
                key={st.key}
                dataKey={st.key}
                name={st.label}
                stackId="a"
                fill={st.color}
                isAnimationActive={false}
              />
            ))}
          </BarChart>
        </ResponsiveContainer>
      </div>
    </figure>
  );
}

/** The backlog per queue and state: a stacked chart, then the same counts as a table with pause buttons. */
function BacklogSection({ data, onToggle }: { data: OverviewDTO; onToggle: Toggle }) {
  return (
    <section>
      <h2>Backlog by queue</h2>
      {data.waitingForKind > 0 && (
        <p className="notice" data-testid="waiting-for-kind">
          {data.waitingForKind} {data.waitingForKind === 1 ? 'job is' : 'jobs are'} waiting for a kind no live worker
          runs: start a worker with a handler for it (they end dead after the grace period).
        </p>
      )}
      <div className="two">
        <QueueChart
          testId="chart-backlog"
          title="Live work by queue"
          states={STATES.filter((st) => LIVE_STATES.has(st.key))}
          queues={data.queues}
        />
        <QueueChart
          testId="chart-outcomes"
          title="Outcomes by queue (dead and cancelled kept, done in the last hour)"
          states={STATES.filter((st) => !LIVE_STATES.has(st.key))}
          queues={data.queues}
        />
      </div>
      <BacklogTable queues={data.queues} alerts={data.alerts} canPause={data.can.pause} onToggle={onToggle} />
    </section>
  );
}

function BacklogTable(props: { queues: QueueDTO[]; alerts: QueueAlertDTO[]; canPause: boolean; onToggle: Toggle }) {
  const { queues, canPause, onToggle } = props;
  return (
    <TableScroll label="Backlog by queue">
      <table data-testid="backlog-table">
        <thead>
          <tr>
            <th>queue</th>
            {STATES.map((s) => (
              <th key={s.key}>{s.label}</th>
            ))}
            <th>oldest ready (lag)</th>
            <th title="ready jobs whose kind version no live worker runs">no worker for kind</th>
            <th>
              <span className="visually-hidden">actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {queues.map((q) => (
            <BacklogRow
              key={q.queue}
              q={q}
              alerts={props.alerts.filter((a) => a.queue === q.queue)}
              canPause={canPause}
              onToggle={onToggle}
            />
          ))}
          {queues.length === 0 && (
            <tr>
              <td colSpan={STATES.length + 4}>No jobs yet.</td>
            </tr>
          )}
        </tbody>
      </table>
    </TableScroll>
  );
}

function BacklogRow(props: { q: QueueDTO; alerts: QueueAlertDTO[]; canPause: boolean; onToggle: Toggle }) {
  const { q, canPause, onToggle } = props;
  return (
    <tr data-testid={`backlog-${q.queue}`}>
      <td>
        <a href={withBasePath(`/jobs?queue=${encodeURIComponent(q.queue)}`)}>{q.queue}</a>
        {q.paused && <span className="badge paused">paused</span>}
        {props.alerts.map((a) => (
          <span
            key={a.alert}
            className="badge health-critical"
            title={a.sentence ?? undefined}
            data-testid="over-alert"
          >
            over alert: {ALERT_LABEL[a.alert].short} {a.valueText} ≥ {a.thresholdText}
          </span>
        ))}{' '}
        <a className="muted" href={withBasePath(`/queues/${encodeURIComponent(q.queue)}`)}>
          groups<span className="visually-hidden"> of queue {q.queue}</span>
        </a>
      </td>
      {STATES.map((s) => (
        <td key={s.key} className="num">
          {String(q[s.key])}
        </td>
      ))}
      <td className="num" data-testid={`lag-${q.queue}`}>
        {age(q.oldestReadyAgeSeconds)}
      </td>
      <td className="num" data-testid={`waiting-for-kind-${q.queue}`}>
        {q.waitingForKind}
      </td>
      <td>{canPause && <PauseQueue queue={q.queue} paused={q.paused} onToggle={onToggle} />}</td>
    </tr>
  );
}

/**
 * An admin's pause or resume of a queue, confirmed in the modal dialog with an optional reason
 * for the audit log; the focus starts on the reason, and goes back to the button (relabelled).
 */
function PauseQueue(props: { queue: string; paused: boolean; onToggle: Toggle }) {
  const [open, setOpen] = useState(false);
  const [busy, setBusy] = useState(false);
  const [reason, setReason] = useState('');
  const opener = useRef<HTMLButtonElement>(null);
  const reasonField = useRef<HTMLInputElement>(null);
  const verb = props.paused ? 'Resume' : 'Pause';
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    await props.onToggle(props.queue, props.paused, reason.trim());
    setBusy(false);
    setOpen(false);
  };
  return (
    <>
      <button
        type="button"
        ref={opener}
        onClick={() => {
          setReason('');
          setOpen(true);
        }}
      >
        {verb}
        <span className="visually-hidden"> queue {props.queue}</span>
      </button>
      {open && (
        <ModalDialog
          title={`${verb} queue ${props.queue}?`}
          testId="pause-dialog"
          initialFocus={reasonField}
          returnFocus={opener}
          onClose={() => setOpen(false)}
        >
          <p>
            {props.paused
              ? 'Workers take its jobs again from their next claim.'
              : 'Workers take nothing from it until it is resumed; running jobs finish, waiting ones keep their place.'}
          </p>
          <form className="limit-form" onSubmit={(event) => void submit(event)}>
            <ReasonField value={reason} onChange={setReason} inputRef={reasonField} />
            <DialogFormEnd
              error={null}
              errorTestId="pause-error"
              busy={busy}
              submitLabel={`${verb} the queue`}
              danger={!props.paused}
              onCancel={() => setOpen(false)}
            />
          </form>
        </ModalDialog>
      )}
    </>
  );
}

function AttemptsSection({ attempts }: { attempts: OverviewDTO['attempts'] }) {
  return (
    <section>
      <h2>Attempts per finished job</h2>
      <p className="muted">The latest 20,000 jobs finished in the last 24 hours.</p>
      <div className="chart" data-testid="chart-attempts">
        <ResponsiveContainer width="100%" height={200}>
          <BarChart data={attempts}>
            <XAxis dataKey="attempts" {...AXIS} />
            <YAxis allowDecimals={false} {...AXIS} />
            <Tooltip {...TOOLTIP} />
            <Bar dataKey="jobs" fill="var(--chart-attempts)" isAnimationActive={false} />
          </BarChart>
        </ResponsiveContainer>
      </div>
      <p>
        {attempts.map((a) => `${a.attempts} attempt${a.attempts === 1 ? '' : 's'}: ${a.jobs}`).join(' · ') ||
          'No finished jobs in the last day.'}
      </p>
    </section>
  );
}

function FailureClassesSection({ data }: { data: OverviewDTO }) {
  const classes = mergeClasses(data);
  return (
    <section>
      <h2>Failure classes</h2>
      <div className="chart" data-testid="chart-failures">
        <ResponsiveContainer width="100%" height={200}>
          <BarChart data={classes}>
            <XAxis dataKey="failureClass" {...AXIS} />
            <YAxis allowDecimals={false} {...AXIS} />
            <Tooltip {...TOOLTIP} />
            <Legend formatter={legendText} />
            <Bar dataKey="lastHour" name="last hour" fill="var(--chart-hour)" isAnimationActive={false} />
            <Bar dataKey="lastDay" name="last day" fill="var(--chart-day)" isAnimationActive={false} />
          </BarChart>
        </ResponsiveContainer>
      </div>
      <p>
        {classes.map((c) => `${c.failureClass}: ${c.lastHour} / ${c.lastDay}`).join(' · ') ||
          'No failures in the last day.'}
      </p>
    </section>
  );
}

function WorkersSection({ workers }: { workers: OverviewDTO['workers'] }) {
  return (
    <section>
      <h2>Live workers ({workers.length})</h2>
      <TableScroll label="Live workers">
        <table data-testid="workers-table">
          <thead>
            <tr>
              <th>worker</th>
              <th>host</th>
              <th>pid</th>
              <th>queues</th>
              <th>concurrency</th>
              <th>started</th>
              <th>last seen</th>
            </tr>
          </thead>
          <tbody>
            {workers.map((w) => (
              <tr key={w.id}>
                <td>{w.id}</td>
                <td>{w.host}</td>
                <td className="num">{w.pid}</td>
                <td>{w.queues.join(', ')}</td>
                <td className="num">{w.concurrency}</td>
                <td>
                  <Time at={w.startedAt} />
                </td>
                <td>
                  <Time at={w.lastSeenAt} />
                </td>
              </tr>
            ))}
            {workers.length === 0 && (
              <tr>
                <td colSpan={7}>No worker has reported in the last minute.</td>
              </tr>
            )}
          </tbody>
        </table>
      </TableScroll>
    </section>
  );
}

function mergeClasses(data: OverviewDTO) {
  const map = new Map<string, { failureClass: string; lastHour: number; lastDay: number }>();
  for (const c of data.failureClasses.lastDay)
    map.set(c.failureClass, { failureClass: c.failureClass, lastHour: 0, lastDay: c.count });
  for (const c of data.failureClasses.lastHour) {
    const entry = map.get(c.failureClass) ?? { failureClass: c.failureClass, lastHour: 0, lastDay: 0 };
    entry.lastHour = c.count;
    map.set(c.failureClass, entry);
  }
  return [...map.values()];
}
