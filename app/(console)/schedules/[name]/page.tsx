import Link from 'next/link';
import { notFound } from 'next/navigation';
import { Fragment, type ReactNode } from 'react';
import { withBasePath } from '../../../../components/base-path.ts';
import { MaskedPayload } from '../../../../components/masked-payload.tsx';
import { PageError } from '../../../../components/page-error.tsx';
import { SchedulePause, ScheduleTimingEditor } from '../../../../components/schedule-forms.tsx';
import { TableScroll } from '../../../../components/table-scroll.tsx';
import { Time } from '../../../../components/time.tsx';
import { getScheduleDetail } from '../../../../lib/dal/index.ts';
import type { ScheduleDetailDTO, ScheduleTickDTO } from '../../../../lib/dto.ts';
import { load } from '../../../../lib/page.ts';
import { schedulePauseText } from '../../../../lib/present.ts';

const none = '—';
const count = (n: number) => n.toLocaleString('en');

/** A duration in the largest whole unit it is: `7 d`, `2 h`, `1 min`, `60 s`, `1,500 ms`. */
function duration(ms: number): string {
  for (const [unit, size] of [
    ['d', 86_400_000],
    ['h', 3_600_000],
    ['min', 60_000],
    ['s', 1_000],
  ] as const) {
    if (ms >= size && ms % size === 0) return `${count(ms / size)} ${unit}`;
  }
  return `${count(ms)} ms`;
}

type Schedule = ScheduleDetailDTO['schedule'];

function missedText(s: Schedule): string {
  const late = `a tick not enqueued within ${duration(s.missedAfterMs)} of its time is missed`;
  if (s.missed === 'skip') return `skip: no missed tick runs (${late})`;
  if (s.missed === 'once') return `once: the newest missed tick runs, late (${late})`;
  return `each ${count(s.missedEach ?? 1)}: the newest ${count(s.missedEach ?? 1)} missed ticks run, late (${late})`;
}

function overlapText(s: Schedule): string {
  return s.overlap === 'skip'
    ? "skip: a tick is passed over while the previous tick's job has not ended"
    : "allow: every tick is enqueued, whatever the previous tick's job is doing";
}

function sourceText(s: Schedule): string {
  const source = s.source === 'code' ? 'declared in code' : 'made at run time';
  return s.overridden && s.source === 'code' ? `${source}, changed at run time` : source;
}

/** A tick's outcome, with how many a missed row passed over. */
function outcomeText(t: ScheduleTickDTO): string {
  return t.outcome === 'missed' ? `missed (${count(t.missedCount ?? 0)})` : t.outcome;
}

/** A link to a job, or what became of it. */
function JobLink(props: { id: string | null; state: string | null; label: string }) {
  if (props.id === null) return <>{none}</>;
  if (props.state === null) return <>removed by retention</>;
  return <a href={withBasePath(`/jobs/${props.id}`)}>{props.label}</a>;
}

export default async function SchedulePage(props: { params: Promise<{ name: string }> }) {
  const { name: segment } = await props.params;
  const name = decodeURIComponent(segment);
  const loaded = await load(() => getScheduleDetail({ name }));
  if (!loaded.ok)
    return (
      <>
        <h1>Schedule</h1>
        <PageError message={loaded.message} />
      </>
    );
  if (!loaded.value) notFound();
  const { schedule: s, can } = loaded.value;
  return (
    <>
      <h1>
        Schedule <span className="mono">{s.name}</span>
      </h1>
      <p className="muted">
        It enqueues a job of {s.kind} v{s.kindVersion} on queue {s.queue} at every tick of its cron expression (times
        here are in your browser’s zone, or UTC with “Times in UTC”; hover one for its zone).{' '}
        <Link href="/schedules">Every schedule</Link>;{' '}
        <Link href={`/jobs?queue=${encodeURIComponent(s.queue)}&kind=${encodeURIComponent(s.kind)}`}>its jobs</Link>.
      </p>
      {(can.pause || can.change) && (
        <div className="actions">
          {can.pause && <SchedulePause name={s.name} paused={s.paused} />}
          {can.change && <ScheduleTimingEditor name={s.name} cron={s.cron} timezone={s.timezone} />}
        </div>
      )}
      <ScheduleFields schedule={s} />
      <MaskedPayload
        payload={loaded.value.payload}
        redactedPaths={loaded.value.redactedPaths}
        payloadHidden={loaded.value.payloadHidden}
        testId="schedule-payload"
      />
      <TicksSection ticks={loaded.value.ticks} />
    </>
  );
}

/** The schedule's settings and ticks as a description list, an empty value as a dash. */
function ScheduleFields({ schedule: s }: { schedule: Schedule }) {
  const fields: [string, string, ReactNode][] = [
    ['state', 'state', schedulePauseText(s)],
    ['source', 'source', sourceText(s)],
    ['cron', 'cron', `"${s.cron}" in ${s.timezone}`],
    [
      'next tick',
      'next-tick',
      <Time key="next" at={s.nextTickAt} variant="absolute" fallback={s.paused ? `${none} (paused)` : none} />,
    ],
    ['last tick', 'last-tick', <Time key="last" at={s.lastTickAt} variant="absolute" />],
    [
      'last job',
      'last-job',
      <JobLink key="job" id={s.lastJobId} state={s.lastJobState} label={s.lastJobState ?? ''} />,
    ],
    ['missed ticks', 'missed', missedText(s)],
    ['overlap', 'overlap', overlapText(s)],
    ['jitter', 'jitter', s.jitterMs === 0 ? 'none' : `each job due up to ${duration(s.jitterMs)} after its tick`],
    ['horizon', 'horizon', `${duration(s.horizonMs)} (missed ticks older than this are not counted)`],
    ['priority', 'priority', String(s.priority)],
    ['max attempts', 'max-attempts', count(s.maxAttempts)],
    ['declared', 'declared', <Time key="declared" at={s.declaredAt} />],
  ];
  return (
    <dl className="fields" data-testid="schedule-fields">
      {fields.map(([label, id, value]) => (
        <Fragment key={id}>
          <dt>{label}</dt>
          <dd data-testid={`schedule-${id}`}>{value}</dd>
        </Fragment>
      ))}
    </dl>
  );
}

function TicksSection({ ticks }: { ticks: ScheduleTickDTO[] }) {
  return (
    <>
      <h2>Recent ticks</h2>
      <TableScroll label="Recent ticks">
        <table data-testid="ticks-table">
          <thead>
            <tr>
              <th>tick</th>
              <th>outcome</th>
              <th>job</th>
              <th>state</th>
            </tr>
          </thead>
          <tbody>
            {ticks.map((t) => (
              <tr key={`${t.tickAt}-${t.outcome}`}>
                <td>
                  <Time at={t.tickAt} variant="absolute" />
                </td>
                <td data-testid="outcome">{outcomeText(t)}</td>
                <td className="mono">
                  <JobLink id={t.jobId} state={t.jobState} label={t.jobId ?? ''} />
                </td>
                <td data-testid="job-state">{t.jobState ?? none}</td>
              </tr>
            ))}
            {ticks.length === 0 && (
              <tr>
                <td colSpan={4}>No tick yet: the first is enqueued at its time by a running worker.</td>
              </tr>
            )}
          </tbody>
        </table>
      </TableScroll>
    </>
  );
}
