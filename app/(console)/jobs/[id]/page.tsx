import { notFound } from 'next/navigation';
import { TableScroll } from '../../../../components/table-scroll.tsx';
import { Fragment, type ReactNode } from 'react';
import { JobActions } from '../../../../components/job-actions.tsx';
import { JobProgress } from '../../../../components/job-progress.tsx';
import { JobTags } from '../../../../components/job-tags.tsx';
import { MaskedPayload } from '../../../../components/masked-payload.tsx';
import { RevealPayload } from '../../../../components/reveal-payload.tsx';
import { PageError } from '../../../../components/page-error.tsx';
import { StateBadge } from '../../../../components/state-badge.tsx';
import { Time } from '../../../../components/time.tsx';
import type { AttemptDTO, AuditDTO, JobDetailDTO, JobDTO } from '../../../../lib/dto.ts';
import { getJobDetail } from '../../../../lib/dal/index.ts';
import { load } from '../../../../lib/page.ts';
import { attemptOutcomeText, errorDetailSummary, errorDetailText, snoozeLine } from '../../../../lib/present.ts';

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
  const { job, attempts, audit, retryPlan, can } = loaded.value;
  return (
    <>
      <h1>
        Job <span className="mono">{job.id}</span> <StateBadge state={job.subState} />
      </h1>
      <JobActions
        id={job.id}
        leaseToken={job.leaseToken}
        canRetry={can.retry}
        canCancel={can.cancel}
        state={job.state}
      />
      <JobFields job={job} />
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
      <JobProgress id={job.id} initial={loaded.value.live} />
      {job.lastError && (
        <>
          <h2>Last error</h2>
          <pre data-testid="last-error" tabIndex={0}>
            {job.lastError}
          </pre>
        </>
      )}
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
      <ResultSection result={loaded.value.result} noResult={loaded.value.noResult} />
      <AttemptsSection attempts={attempts} />
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

/** What the completing attempt returned, masked as the payload is; or why it was not kept; or that there is none. */
function ResultSection({ result, noResult }: Pick<JobDetailDTO, 'result' | 'noResult'>) {
  if (result && result.marker === null) {
    return (
      <MaskedPayload
        title="Result"
        payload={result.value}
        redactedPaths={result.redactedPaths}
        payloadHidden={result.hidden}
        testId="result"
        hiddenTestId="result-hidden"
      >
        <p className="muted">
          Returned by attempt {result.attempt}, stored <Time at={result.storedAt} /> ({result.bytes} bytes of JSON).
        </p>
      </MaskedPayload>
    );
  }
  return (
    <>
      <h2>Result</h2>
      {result ? (
        <p data-testid="result-marker">
          {result.marker} (attempt {result.attempt}, <Time at={result.storedAt} />)
        </p>
      ) : (
        <p className="muted" data-testid="result-none">
          {noResult}
        </p>
      )}
    </>
  );
}

function AttemptsSection({ attempts }: { attempts: AttemptDTO[] }) {
  return (
    <>
      <h2>Attempts</h2>
      <TableScroll label="Attempts">
        <table data-testid="attempts-table">
          <thead>
            <tr>
              <th className="num">#</th>
              <th>outcome</th>
              <th>worker</th>
              <th>started</th>
              <th>ended</th>
              <th className="num">ms</th>
              <th>class</th>
              <th>error</th>
            </tr>
          </thead>
          <tbody>
            {attempts.map((a) => (
              <AttemptRows key={`${a.attempt}-${a.startedAt}`} a={a} />
            ))}
            {attempts.length === 0 && (
              <tr>
                <td colSpan={8}>No attempt has ended yet.</td>
              </tr>
            )}
          </tbody>
        </table>
      </TableScroll>
    </>
  );
}

/** One ended attempt's row, and under it the error's detail when it has one. */
function AttemptRows({ a }: { a: AttemptDTO }) {
  const shown = attemptOutcomeText(a);
  return (
    <>
      <tr>
        <td className="num">{a.attempt}</td>
        <td data-outcome={a.outcome}>{shown.outcome}</td>
        <td>{a.workerId ?? ''}</td>
        <td>
          <Time at={a.startedAt} />
        </td>
        <td>
          <Time at={a.endedAt} />
        </td>
        <td className="num">{a.durationMs}</td>
        <td>{a.failureClass ?? ''}</td>
        <td className="mono">{shown.error}</td>
      </tr>
      {a.errorDetail && (
        <tr>
          <td colSpan={8}>
            <details data-testid={`attempt-detail-${a.attempt}`}>
              <summary>
                Attempt {a.attempt}: {errorDetailSummary(a.errorDetail)}
              </summary>
              <pre tabIndex={0}>{errorDetailText(a.errorDetail)}</pre>
            </details>
          </td>
        </tr>
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
