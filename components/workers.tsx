'use client';
import { useQuery } from '@tanstack/react-query';
import type { WorkerDTO, WorkersDTO } from '../lib/dto.ts';
import { withBasePath } from './base-path.ts';
import { seconds } from './health.tsx';
import { fetchWorkers, poll, POLL, queryKeys } from './queries.ts';
import { Time } from './time.tsx';
import { TableScroll } from './table-scroll.tsx';

const none = '—';

/** The schema versions a worker's code reads: `19–20`, or only its own for older code. */
function schemaRange(w: WorkerDTO): string {
  if (w.codeVersion === null) return none;
  if (w.schemaFrom === null) return `${w.codeVersion}`;
  return w.schemaFrom === w.codeVersion ? `${w.codeVersion}` : `${w.schemaFrom}–${w.codeVersion}`;
}

/** How many live workers run each Leasehold version: a rolling deploy shows two. */
function versions(workers: WorkerDTO[]): string {
  const byVersion = new Map<string, number>();
  for (const w of workers) byVersion.set(w.version ?? 'unknown', (byVersion.get(w.version ?? 'unknown') ?? 0) + 1);
  return [...byVersion].map(([version, n]) => `${version} (${n})`).join(', ');
}

/**
 * The Workers page's body: the live workers with their Leasehold version, schema range, kind
 * versions, queues, concurrency and last heartbeat, and the queues whose jobs wait for a kind
 * no live worker runs. The server renders it; it polls GET /api/workers every POLL.workers ms
 * while the tab is visible.
 */
export function WorkersPanel({ initial }: { initial: WorkersDTO }) {
  const { data, error } = useQuery({
    queryKey: queryKeys.workers,
    queryFn: fetchWorkers,
    initialData: initial,
    initialDataUpdatedAt: Date.parse(initial.generatedAt),
    refetchInterval: poll(POLL.workers),
  });
  const read = Date.parse(data.generatedAt);
  return (
    <div>
      <p className="muted">
        Read <Time at={data.generatedAt} /> · refreshes every {POLL.workers / 1000} s · a worker is live while it
        reported within {data.liveWithinSeconds} s
      </p>
      {error && (
        <p className="error" role="alert">
          Could not refresh the workers: {error.message}
        </p>
      )}
      <section>
        <h2>Live workers ({data.workers.length})</h2>
        {data.workers.length > 0 && <p data-testid="worker-versions">Leasehold versions: {versions(data.workers)}</p>}
        <TableScroll label="Live workers">
          <table data-testid="live-workers-table">
            <thead>
              <tr>
                <th>worker</th>
                <th>host</th>
                <th className="num">pid</th>
                <th>Leasehold version</th>
                <th>schema versions read</th>
                <th>kinds (versions)</th>
                <th>queues</th>
                <th className="num">concurrency</th>
                <th>started</th>
                <th>last heartbeat</th>
              </tr>
            </thead>
            <tbody>
              {data.workers.map((w) => (
                <tr key={w.id} data-testid={`worker-${w.id}`}>
                  <td className="mono">{w.id}</td>
                  <td>{w.host}</td>
                  <td className="num">{w.pid}</td>
                  <td data-testid="worker-version">{w.version ?? 'unknown'}</td>
                  <td data-testid="worker-schema">{schemaRange(w)}</td>
                  <td data-testid="worker-kinds">{w.kinds.map((k) => `${k.kind} v${k.version}`).join(', ') || none}</td>
                  <td>{w.queues.join(', ')}</td>
                  <td className="num">{w.concurrency}</td>
                  <td>
                    <Time at={w.startedAt} />
                  </td>
                  <td>
                    <Time at={w.lastSeenAt} /> ({seconds(Math.max(0, (read - Date.parse(w.lastSeenAt)) / 1000))} before)
                  </td>
                </tr>
              ))}
              {data.workers.length === 0 && (
                <tr>
                  <td colSpan={10}>No worker has reported in the last {data.liveWithinSeconds} s.</td>
                </tr>
              )}
            </tbody>
          </table>
        </TableScroll>
      </section>
      <section>
        <h2>Jobs waiting for a kind no live worker runs</h2>
        <p className="muted">
          Ready, scheduled and retrying jobs whose kind version no live worker runs: a worker claims only its
          handlers&apos; kind versions. Start a worker with a handler for it (the jobs end dead after the grace period).
        </p>
        <TableScroll label="Jobs waiting for a kind no live worker runs">
          <table data-testid="waiting-for-kind-table">
            <thead>
              <tr>
                <th>queue</th>
                <th className="num">jobs</th>
              </tr>
            </thead>
            <tbody>
              {data.waitingForKind.map((q) => (
                <tr key={q.queue} data-testid={`unrun-${q.queue}`}>
                  <td>
                    <a href={withBasePath(`/jobs?queue=${encodeURIComponent(q.queue)}`)}>{q.queue}</a>
                  </td>
                  <td className="num">{q.jobs.toLocaleString('en-US')}</td>
                </tr>
              ))}
              {data.waitingForKind.length === 0 && (
                <tr>
                  <td colSpan={2}>None: a live worker runs the kind version of every waiting job.</td>
                </tr>
              )}
            </tbody>
          </table>
        </TableScroll>
      </section>
    </div>
  );
}
