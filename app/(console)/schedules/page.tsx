import Link from 'next/link';
import { withBasePath } from '../../../components/base-path.ts';
import { PageError } from '../../../components/page-error.tsx';
import { TableScroll } from '../../../components/table-scroll.tsx';
import { Time } from '../../../components/time.tsx';
import { getSchedules } from '../../../lib/dal/index.ts';
import { load } from '../../../lib/page.ts';
import { scheduleStateText } from '../../../lib/present.ts';

const none = '—';

export default async function SchedulesPage() {
  const loaded = await load(() => getSchedules());
  return (
    <>
      <h1>Schedules</h1>
      <p className="muted">
        Recurring jobs: each schedule enqueues a job of its kind at every tick of its cron expression, read in its time
        zone (times here are in your browser’s zone, or UTC with “Times in UTC”; hover one for its zone). Schedules are
        declared in code beside their handler, or made at run time; an admin pauses, resumes or changes one on its page
        (recorded in the audit log).
      </p>
      {!loaded.ok ? (
        <PageError message={loaded.message} />
      ) : (
        <TableScroll label="Schedules">
          <table data-testid="schedules-table">
            <thead>
              <tr>
                <th>schedule</th>
                <th>kind</th>
                <th>queue</th>
                <th>cron</th>
                <th>next tick</th>
                <th>last tick</th>
                <th>last job</th>
                <th>state</th>
              </tr>
            </thead>
            <tbody>
              {loaded.value.schedules.map((s) => (
                <tr key={s.name} data-testid={`schedule-${s.name}`}>
                  <td className="mono">
                    <Link href={`/schedules/${encodeURIComponent(s.name)}`}>{s.name}</Link>
                  </td>
                  <td data-testid="kind">
                    {s.kind} v{s.kindVersion}
                  </td>
                  <td data-testid="queue">{s.queue}</td>
                  <td data-testid="cron">
                    <span className="mono">{s.cron}</span> in {s.timezone}
                  </td>
                  <td data-testid="next-tick">
                    <Time at={s.nextTickAt} variant="absolute" />
                  </td>
                  <td data-testid="last-tick">
                    <Time at={s.lastTickAt} variant="absolute" />
                  </td>
                  <td data-testid="last-job">
                    {s.lastJobId === null ? (
                      none
                    ) : s.lastJobState === null ? (
                      'removed by retention'
                    ) : (
                      <a href={withBasePath(`/jobs/${s.lastJobId}`)}>
                        {s.lastJobState}
                        <span className="visually-hidden"> (the last job of {s.name})</span>
                      </a>
                    )}
                  </td>
                  <td data-testid="state">{scheduleStateText(s)}</td>
                </tr>
              ))}
              {loaded.value.schedules.length === 0 && (
                <tr>
                  <td colSpan={8}>
                    No schedules yet: declare one in code beside its handler (defineSchedule) and it shows here once a
                    worker running that code has started, or create one with leasehold schedules create.
                  </td>
                </tr>
              )}
            </tbody>
          </table>
        </TableScroll>
      )}
    </>
  );
}
