'use client';
import { useQuery } from '@tanstack/react-query';
import type { HealthDTO, HorizonHolderDTO } from '../lib/dto.ts';
import { fetchHealth, poll, POLL, queryKeys } from './queries.ts';
import { TableScroll } from './table-scroll.tsx';
import { Time } from './time.tsx';

type CheckState = HealthDTO['checks'][number]['state'];

const none = '—';
const count = (n: number) => n.toLocaleString('en-US');

/** Seconds in words: `45 s`, `7 min`, `2.5 h`, `3 days`. */
export function seconds(s: number | null): string {
  if (s === null) return none;
  if (s < 120) return `${Math.round(s)} s`;
  if (s < 7200) return `${Math.round(s / 60)} min`;
  if (s < 172_800) return `${(s / 3600).toFixed(1)} h`;
  return `${Math.round(s / 86_400)} days`;
}

/** Bytes as pg_size_pretty says them (1 kB = 1024 bytes). */
function size(n: number): string {
  const units = ['bytes', 'kB', 'MB', 'GB', 'TB'];
  let value = n;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${value} bytes` : `${value < 10 ? value.toFixed(1) : Math.round(value)} ${units[unit]}`;
}

/** A check's state as a badge: ok green, warning amber, critical red, unreadable grey. */
export function CheckBadge({ state, testId }: { state: CheckState; testId?: string }) {
  return (
    <span className={`badge health-${state}`} data-state={state} data-testid={testId}>
      {state === 'unreadable' ? 'not readable' : state}
    </span>
  );
}

/**
 * The Health page's body (docs/operations.md, "Reading the health page"): the server renders it
 * with the page's read, then it polls GET /api/health every POLL.health ms while the tab is
 * visible. A refresh that fails keeps the last figures and says so.
 */
export function HealthPanel({ initial }: { initial: HealthDTO }) {
  const { data, error } = useQuery({
    queryKey: queryKeys.health,
    queryFn: fetchHealth,
    initialData: initial,
    initialDataUpdatedAt: Date.parse(initial.generatedAt),
    refetchInterval: poll(POLL.health),
  });
  return (
    <div className="health">
      <p className="muted">
        Read <Time at={data.generatedAt} testId="health-read" /> · refreshes every {POLL.health / 1000} s
      </p>
      {error && (
        <p className="error" role="alert">
          Could not refresh the health page: {error.message}
        </p>
      )}
      <p data-testid="health-state">
        Overall: <CheckBadge state={data.state} />
      </p>
      <ChecksTable checks={data.checks} />
      <HoldersSection data={data} />
      <TablesSection tables={data.tables} />
      <ServerSection data={data} />
    </div>
  );
}

function ChecksTable({ checks }: { checks: HealthDTO['checks'] }) {
  return (
    <section>
      <h2>Checks</h2>
      <TableScroll label="Checks">
        <table data-testid="checks-table">
          <thead>
            <tr>
              <th>check</th>
              <th>state</th>
              <th>what it means</th>
            </tr>
          </thead>
          <tbody>
            {checks.map((c) => (
              <tr key={c.check} data-testid={`check-${c.check}`}>
                <td>{c.title}</td>
                <td>
                  <CheckBadge state={c.state} testId="check-state" />
                </td>
                <td data-testid="check-sentence">{c.sentence}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </TableScroll>
    </section>
  );
}

/** A holder's row id: its kind and what names it (pid, slot, gid). */
function holderKey(h: HorizonHolderDTO): string {
  switch (h.holder) {
    case 'session':
      return `session-${h.pid}`;
    case 'replication slot':
      return `slot-${h.slot}`;
    case 'prepared transaction':
      return `prepared-${h.gid}`;
  }
}

function HoldersSection({ data }: { data: HealthDTO }) {
  const detail = data.sessionDetail;
  return (
    <section>
      <h2>What holds the horizon</h2>
      <p className="muted">
        The sessions in a transaction, replication slots and prepared transactions that keep vacuum from removing dead
        rows, the oldest first (at most five). The first holds the horizon.
        {!data.activityReadable && ` Other users' sessions are not readable with this role's grants: ${data.grantHint}`}
      </p>
      <TableScroll label="What holds the horizon">
        <table data-testid="holders-table">
          <thead>
            <tr>
              <th>holder</th>
              <th>pid or name</th>
              <th>application</th>
              <th>user or owner</th>
              <th>state</th>
              <th>transaction start</th>
              <th className="num">open for</th>
              <th className="num">transactions behind</th>
              {detail && <th>client address</th>}
              {detail && <th>query start</th>}
            </tr>
          </thead>
          <tbody>
            {data.holders.map((h) => (
              <HolderRow key={holderKey(h)} h={h} detail={detail} />
            ))}
            {data.holders.length === 0 && (
              <tr>
                <td colSpan={detail ? 10 : 8}>Nothing holds the horizon back.</td>
              </tr>
            )}
          </tbody>
        </table>
      </TableScroll>
    </section>
  );
}

function HolderRow({ h, detail }: { h: HorizonHolderDTO; detail: boolean }) {
  const cells =
    h.holder === 'session'
      ? {
          name: `pid ${h.pid}`,
          application: h.application || none,
          user: h.user,
          state: h.state,
          since: h.transactionStart,
        }
      : h.holder === 'replication slot'
        ? {
            name: h.slot,
            application: none,
            user: null,
            state: `${h.active ? 'active' : 'inactive'} ${h.slotType} slot, holds ${h.holds}`,
            since: null,
          }
        : { name: h.gid, application: none, user: h.owner, state: `prepared in ${h.database}`, since: h.preparedAt };
  return (
    <tr data-testid={`holder-${holderKey(h)}`} title={h.text}>
      <td>{h.holder}</td>
      <td className="mono" data-testid="holder-name">
        {cells.name}
      </td>
      <td data-testid="holder-application">{cells.application}</td>
      <td>{cells.user ?? none}</td>
      <td>{cells.state ?? none}</td>
      <td>
        <Time at={cells.since} />
      </td>
      <td className="num">{seconds(h.ageSeconds)}</td>
      <td className="num">{count(h.xidAge)}</td>
      {detail && <td className="mono">{h.holder === 'session' ? (h.clientAddress ?? none) : none}</td>}
      {detail && (
        <td className="mono" data-testid="holder-query">
          {h.holder === 'session' ? (h.query ?? none) : none}
        </td>
      )}
    </tr>
  );
}

function TablesSection({ tables }: { tables: HealthDTO['tables'] }) {
  return (
    <section>
      <h2>Tables</h2>
      <p className="muted">
        Leasehold&apos;s tables as PostgreSQL&apos;s statistics count them. The bloat is an estimate: the bytes beyond
        what the live rows need at the table&apos;s fill factor.
      </p>
      <TableScroll label="Tables">
        <table data-testid="tables-table">
          <thead>
            <tr>
              <th>table</th>
              <th className="num">live rows</th>
              <th className="num">dead rows</th>
              <th>last vacuum</th>
              <th>last autovacuum</th>
              <th>last analyze</th>
              <th>last autoanalyze</th>
              <th className="num">size</th>
              <th className="num">index size</th>
              <th className="num">bloat estimate</th>
            </tr>
          </thead>
          <tbody>
            {tables.map((t) => (
              <tr key={t.table} data-testid={`table-${t.table}`}>
                <td className="mono">{t.table}</td>
                <td className="num">{count(t.liveTuples)}</td>
                <td className="num">{count(t.deadTuples)}</td>
                <td>
                  <Time at={t.lastVacuum} />
                </td>
                <td>
                  <Time at={t.lastAutovacuum} />
                </td>
                <td>
                  <Time at={t.lastAnalyze} />
                </td>
                <td>
                  <Time at={t.lastAutoanalyze} />
                </td>
                <td className="num">{size(t.tableBytes)}</td>
                <td className="num">{size(t.indexBytes)}</td>
                <td className="num">{size(t.bloatBytes)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </TableScroll>
    </section>
  );
}

function ServerSection({ data }: { data: HealthDTO }) {
  const total = data.connections.reduce((n, c) => n + c.count, 0);
  return (
    <section>
      <h2>The server</h2>
      <ul data-testid="server-facts">
        <li data-testid="autovacuum">
          Autovacuum: <strong>{data.autovacuum ? 'on' : 'off'}</strong>
          {!data.autovacuum && ' (nothing removes dead rows unless someone runs VACUUM)'}
        </li>
        <li data-testid="notify-usage">NOTIFY queue: {(data.notifyQueueUsage * 100).toFixed(1)} % in use</li>
        <li data-testid="connections-total">
          Connections: {count(total)} of max_connections {count(data.maxConnections)}
        </li>
      </ul>
      <TableScroll label="Connections by application name">
        <table data-testid="connections-table">
          <thead>
            <tr>
              <th>application name</th>
              <th className="num">connections</th>
            </tr>
          </thead>
          <tbody>
            {data.connections.map((c) => (
              <tr key={c.application}>
                <td>{c.application || '(none)'}</td>
                <td className="num">{count(c.count)}</td>
              </tr>
            ))}
            {data.connections.length === 0 && (
              <tr>
                <td colSpan={2}>{data.activityReadable ? 'No client connections.' : 'Not readable with this role.'}</td>
              </tr>
            )}
          </tbody>
        </table>
      </TableScroll>
    </section>
  );
}
