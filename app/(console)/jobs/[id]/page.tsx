import Link from 'next/link';
import { notFound } from 'next/navigation';
import { TableScroll } from '../../../../components/table-scroll.tsx';
import { Fragment, type ReactNode } from 'react';
import {
  LiveAttempts,
  LiveJobActions,
  LiveLastError,
  LiveResult,
  LiveStateBadge,
} from '../../../../components/job-live.tsx';
import { JobProgress } from '../../../../components/job-progress.tsx';
import { JobTags } from '../../../../components/job-tags.tsx';
import { MaskedPayload } from '../../../../components/masked-payload.tsx';
import { RevealPayload } from '../../../../components/reveal-payload.tsx';
import { SupportActions } from '../../../../components/support-actions.tsx';
import { PageError } from '../../../../components/page-error.tsx';
import { Time } from '../../../../components/time.tsx';
import type { AuditDTO, JobDetailDTO, JobDTO } from '../../../../lib/dto.ts';
import { getJobDetail } from '../../../../lib/dal/index.ts';
import { load } from '../../../../lib/page.ts';
import { snoozeLine } from '../../../../lib/present.ts';

export default async function JobPage(props: { params: Promise<{ id: string }> }) {
  const { id } = await props.params;
  const loaded = await load(() => getJobDetail(id));
  if (!loaded.ok)
    return (
      <>
        <h1>Job</h1>
        <PageError message={loaded.message} />
      </>
    );
  if (!loaded.value) notFound();
  // The state, progress, attempts, result, last error and actions follow the job while it is
  // not finished (components/job-live.tsx), without a reload; the rest is as it was at render.
  const { job, audit, retryPlan, can, live, reruns } = loaded.value;
  return (
    <>
      <h1>
        Job <span className="mono">{job.id}</span> <LiveStateBadge id={job.id} initial={live} />
      </h1>
      <LiveJobActions id={job.id} initial={live} />
      <SupportActions id={job.id} initial={live} rerun={can.rerun} />
      <JobFields job={job} />
      <Reruns reruns={reruns} />
      {job.waiting.length > 0 && (
        <>
          <h2>Why it waits</h2>
          <ul data-testid="waiting-reasons">
            {job.waiting.map((why) => (
              <li key={why}>{why}</li>
            ))}
          </ul>
        </>
      )}
      <JobProgress id={job.id} initial={live} />
      <LiveLastError id={job.id} initial={live} />
      {can.retry && (
        <>
          <h2>What a retry will do</h2>
          <p data-testid="retry-plan">{retryPlan}</p>
        </>
      )}
      <MaskedPayload
        payload={loaded.value.payload}
        redactedPaths={loaded.value.redactedPaths}
        payloadHidden={loaded.value.payloadHidden}
        testId="payload"
      >
        {can.reveal && <RevealPayload id={job.id} />}
      </MaskedPayload>
      <LiveResult id={job.id} initial={live} />
      <LiveAttempts id={job.id} initial={live} />
      <AuditSection audit={audit} />
    </>
  );
}

/** The job's columns as a description list, an empty value as a dash. */
function JobFields({ job }: { job: JobDTO }) {
  const at = (iso: string | null) => (iso === null ? null : <Time at={iso} />);
  const fields: [string, ReactNode][] = [
    ['queue', job.queue],
    ['kind', `${job.kind} v${job.kindVersion}`],
    ['priority', job.priority],
    ['attempts', job.attemptLine],
    ['snoozed', snoozeLine(job)],
    ['run at', at(job.runAt)],
    ['created', at(job.createdAt)],
    ['started', at(job.startedAt)],
    ['finished', at(job.finishedAt)],
    ['lease until', at(job.leaseUntil)],
    ['worker', job.workerId],
    ['failure class', job.failureClass],
    ['idempotency key', job.idempotencyKey],
    ['trace id', job.traceId],
    ['updated', at(job.updatedAt)],
  ];
  return (
    <dl className="fields" data-testid="job-fields">
      {fields.map(([k, v]) => (
        <Fragment key={k}>
          <dt>{k}</dt>
          <dd>{v === null || v === '' ? '—' : v}</dd>
        </Fragment>
      ))}
      <dt>tags</dt>
      <dd>{job.tags.length === 0 ? '—' : <JobTags tags={job.tags} />}</dd>
    </dl>
  );
}

/** A re-run's links: the done job a copy re-runs, and the copies re-runs made of a job. */
function Reruns({ reruns }: { reruns: JobDetailDTO['reruns'] }) {
  const link = (id: string) => (
    <Link key={id} href={`/jobs/${id}`} className="mono">
      {id}
    </Link>
  );
  return (
    <>
      {reruns.rerunOf && <p data-testid="rerun-of">re-run of {link(reruns.rerunOf)}</p>}
      {reruns.rerunAs.length > 0 && (
        <p data-testid="rerun-as">
          re-run as{' '}
          {reruns.rerunAs.map((id, i) => (
            <Fragment key={id}>
              {i > 0 && ', '}
              {link(id)}
            </Fragment>
          ))}
        </p>
      )}
    </>
  );
}

function AuditSection({ audit }: { audit: AuditDTO[] }) {
  return (
    <>
      <h2>Audit</h2>
      <TableScroll label="Audit of this job">
        <table>
          <thead>
            <tr>
              <th>when</th>
              <th>who</th>
              <th>action</th>
              <th>outcome</th>
              <th>reason</th>
            </tr>
          </thead>
          <tbody>
            {audit.map((a) => (
              <tr key={a.id}>
                <td>
                  <Time at={a.at} />
                </td>
                <td>{a.actor}</td>
                <td>{a.action}</td>
                <td>{a.outcome}</td>
                <td>{a.reason ?? ''}</td>
              </tr>
            ))}
            {audit.length === 0 && (
              <tr>
                <td colSpan={5}>No operator has touched this job.</td>
              </tr>
            )}
          </tbody>
        </table>
      </TableScroll>
    </>
  );
}
