/**
 * PostgreSQL's health as a queue sees it (docs/operations.md, "Reading the health page"): what
 * breaks a PostgreSQL queue long before throughput does is the MVCC horizon. A transaction left
 * open (an idle-in-transaction session), a forgotten replication slot or prepared transaction
 * keeps every dead row it could see, so the ready rows, leases and jobs bloat, and each claim
 * walks further. This read names what holds the horizon, counts what vacuum cannot remove, and
 * says whether autovacuum runs at all, each as a check with a state and a sentence.
 *
 * Every figure comes from the catalogs and statistics views (pg_stat_user_tables, pg_class,
 * pg_stat_activity, pg_replication_slots, pg_prepared_xacts): nothing walks the jobs, so the read
 * costs the same at a million jobs as at none (bench/dashboard.ts). Other users' sessions show
 * their transaction and xmin only to a role with pg_read_all_stats (part of pg_monitor; db/roles.sql
 * grants it to leasehold_dashboard): without it the horizon check says it is not readable, and
 * how to grant it, instead of a guess.
 */
import { sql } from 'drizzle-orm';
import { run, toDateOrNull, type Executor, type PgTimestamp } from '../queue/executor.ts';

export type CheckState = 'ok' | 'warning' | 'critical' | 'unreadable';

export const CHECK_IDS = ['autovacuum', 'horizon', 'dead_tuples', 'notify_queue', 'connections'] as const;
export type CheckId = (typeof CHECK_IDS)[number];

export interface HealthCheck {
  check: CheckId;
  title: string;
  state: CheckState;
  /** What the state means here, in one or two sentences that name the cause. */
  sentence: string;
}

export interface TableHealth {
  table: string;
  liveTuples: number;
  deadTuples: number;
  lastVacuum: Date | null;
  lastAutovacuum: Date | null;
  lastAnalyze: Date | null;
  lastAutoanalyze: Date | null;
  tableBytes: number;
  indexBytes: number;
  /** Estimated bytes beyond what the live rows need (from the planner's statistics, else the dead share). */
  bloatBytes: number;
}

/** What holds back the oldest xmin: a session's transaction, a replication slot, a prepared transaction. */
export type HorizonHolder =
  | {
      holder: 'session';
      xidAge: number;
      /** Seconds its transaction has been open. */
      ageSeconds: number | null;
      pid: number;
      application: string;
      user: string | null;
      state: string | null;
      transactionStart: Date | null;
      /** Admins only (null for the others): the client's address and the start of its query. */
      clientAddress: string | null;
      query: string | null;
    }
  | {
      holder: 'replication slot';
      xidAge: number;
      ageSeconds: null;
      slot: string;
      slotType: string;
      active: boolean;
      /** `xmin` holds every table; `catalog_xmin` (a logical slot's) the catalogs. */
      holds: 'xmin' | 'catalog_xmin';
    }
  | {
      holder: 'prepared transaction';
      xidAge: number;
      ageSeconds: number | null;
      gid: string;
      owner: string;
      database: string;
      preparedAt: Date | null;
    };

export interface Health {
  generatedAt: Date;
  /** The worst state of the checks (unreadable counts as warning). */
  state: Exclude<CheckState, 'unreadable'>;
  checks: HealthCheck[];
  tables: TableHealth[];
  /** The oldest first, at most 5; [0] holds the horizon. */
  holders: HorizonHolder[];
  autovacuum: boolean;
  notifyQueueUsage: number;
  maxConnections: number;
  connections: { application: string; count: number }[];
  /** Whether this role sees other users' transactions (pg_read_all_stats); if not, the grant that fixes it. */
  activityReadable: boolean;
  grantHint: string;
}

/** What turns each check's figure into a state: warning at the first, critical at the second. */
export interface HealthThresholds {
  horizonSeconds: readonly [number, number];
  slotXidAge: readonly [number, number];
  deadShare: readonly [number, number];
  deadTuplesFloor: number;
  notifyUsage: readonly [number, number];
  connectionShare: readonly [number, number];
}

/** The thresholds each check turns into a state (docs/operations.md lists them). */
export const HEALTH_THRESHOLDS: HealthThresholds = {
  /** Seconds a transaction (or a prepared one) may hold the horizon: warning, critical. */
  horizonSeconds: [60, 300],
  /** Transactions a replication slot's xmin may lag: warning, critical (an inactive slot warns at once). */
  slotXidAge: [100_000, 1_000_000],
  /** A table's dead share of its rows (with at least deadTuplesFloor dead): warning, critical. */
  deadShare: [0.2, 0.5],
  deadTuplesFloor: 10_000,
  /** The NOTIFY queue's usage: warning, critical (at 0.5 enqueues stop sending wake-ups). */
  notifyUsage: [0.1, 0.5],
  /** Connections' share of max_connections: warning, critical. */
  connectionShare: [0.8, 0.95],
};

const RANK: Record<CheckState, number> = { ok: 0, unreadable: 1, warning: 1, critical: 2 };

const stateOf = (value: number, [warning, critical]: readonly [number, number]): CheckState =>
  value >= critical ? 'critical' : value >= warning ? 'warning' : 'ok';

export const count = (n: number) =>
  n >= 1_000_000
    ? `${(n / 1_000_000).toFixed(1)} M`
    : n >= 10_000
      ? `${Math.round(n / 1000)} k`
      : n.toLocaleString('en-US');

export const duration = (seconds: number) =>
  seconds < 120
    ? `${Math.round(seconds)} s`
    : seconds < 7200
      ? `${Math.round(seconds / 60)} min`
      : seconds < 172_800
        ? `${(seconds / 3600).toFixed(1)} h`
        : `${Math.round(seconds / 86_400)} days`;

/** `a transaction from `billing-api` (pid 4711) has been open for 7 min`, and the slot's and the prepared transaction's. */
export function holderText(h: HorizonHolder): string {
  switch (h.holder) {
    case 'session':
      return `a transaction from \`${h.application || 'no application name'}\` (pid ${h.pid}${h.user ? `, user ${h.user}` : ''}${h.state ? `, ${h.state}` : ''}) ${h.ageSeconds === null ? `holds the horizon ${count(h.xidAge)} transactions back` : `has been open for ${duration(h.ageSeconds)}`}`;
    case 'replication slot':
      return `the ${h.active ? 'active' : 'inactive'} ${h.slotType} replication slot \`${h.slot}\` holds its ${h.holds} ${count(h.xidAge)} transactions back${h.active ? '' : ' (drop it with pg_drop_replication_slot if nothing reads it)'}`;
    case 'prepared transaction':
      return `the prepared transaction \`${h.gid}\` (owner ${h.owner}) has waited for COMMIT PREPARED or ROLLBACK PREPARED for ${duration(h.ageSeconds ?? 0)}`;
  }
}

function holderState(h: HorizonHolder, limits: HealthThresholds): CheckState {
  if (h.holder === 'replication slot') {
    const byAge = stateOf(h.xidAge, limits.slotXidAge);
    return byAge === 'ok' && !h.active ? 'warning' : byAge;
  }
  return stateOf(h.ageSeconds ?? 0, limits.horizonSeconds);
}

interface ActivityRow {
  pid: number;
  application_name: string | null;
  usename: string | null;
  state: string | null;
  xact_start: PgTimestamp | null;
  age_seconds: number | null;
  xid_age: number;
  client_addr: string | null;
  query: string | null;
}

async function readHolders(executor: Executor, admin: boolean): Promise<HorizonHolder[]> {
  // One statement, so the read's own other connections (none run meanwhile: readHealth runs
  // this first) are never named as holders.
  type SlotRow = {
    slot_name: string;
    slot_type: string;
    active: boolean;
    xmin_age: number | null;
    catalog_age: number | null;
  };
  type PreparedRow = {
    gid: string;
    owner: string;
    database: string;
    prepared: PgTimestamp;
    age_seconds: number;
    xid_age: number;
  };
  const [row] = await run<{ sessions: ActivityRow[]; slots: SlotRow[]; prepared: PreparedRow[] }>(
    executor,
    sql`SELECT
          (SELECT coalesce(jsonb_agg(to_jsonb(s) ORDER BY s.xid_age DESC, s.xact_start NULLS LAST), '[]')
           FROM (SELECT pid, application_name, usename, state, xact_start,
                        extract(epoch FROM statement_timestamp() - xact_start)::float8 AS age_seconds,
                        greatest(coalesce(age(backend_xmin), 0), coalesce(age(backend_xid), 0))::bigint AS xid_age,
                        host(client_addr) AS client_addr, left(query, 200) AS query
                 FROM pg_catalog.pg_stat_activity
                 WHERE pid <> pg_backend_pid() AND (backend_xmin IS NOT NULL OR backend_xid IS NOT NULL)
                 ORDER BY xid_age DESC, xact_start NULLS LAST LIMIT 5) s) AS sessions,
          (SELECT coalesce(jsonb_agg(to_jsonb(r)), '[]')
           FROM (SELECT slot_name, slot_type, active, age(xmin)::bigint AS xmin_age, age(catalog_xmin)::bigint AS catalog_age
                 FROM pg_catalog.pg_replication_slots WHERE xmin IS NOT NULL OR catalog_xmin IS NOT NULL) r) AS slots,
          (SELECT coalesce(jsonb_agg(to_jsonb(p) ORDER BY p.prepared), '[]')
           FROM (SELECT gid, owner, database, prepared, extract(epoch FROM statement_timestamp() - prepared)::float8 AS age_seconds,
                        age(transaction)::bigint AS xid_age
                 FROM pg_catalog.pg_prepared_xacts ORDER BY prepared LIMIT 5) p) AS prepared`,
  );
  const { sessions, slots, prepared } = row!;
  const holders: HorizonHolder[] = [
    ...sessions.map(
      (s): HorizonHolder => ({
        holder: 'session',
        xidAge: Number(s.xid_age),
        ageSeconds: s.age_seconds === null ? null : Math.max(0, Number(s.age_seconds)),
        pid: s.pid,
        application: s.application_name ?? '',
        user: s.usename,
        state: s.state,
        transactionStart: toDateOrNull(s.xact_start),
        clientAddress: admin ? s.client_addr : null,
        query: admin ? s.query : null,
      }),
    ),
    ...slots.map((s): HorizonHolder => {
      const holdsXmin = s.xmin_age !== null && Number(s.xmin_age) >= Number(s.catalog_age ?? 0);
      return {
        holder: 'replication slot',
        xidAge: Number(holdsXmin ? s.xmin_age : s.catalog_age),
        ageSeconds: null,
        slot: s.slot_name,
        slotType: s.slot_type,
        active: s.active,
        holds: holdsXmin ? 'xmin' : 'catalog_xmin',
      };
    }),
    ...prepared.map(
      (p): HorizonHolder => ({
        holder: 'prepared transaction',
        xidAge: Number(p.xid_age),
        ageSeconds: Math.max(0, Number(p.age_seconds)),
        gid: p.gid,
        owner: p.owner,
        database: p.database,
        preparedAt: toDateOrNull(p.prepared),
      }),
    ),
  ];
  // The one holding the horizon is the one furthest back; a tie goes to the longest open.
  return holders.sort((a, b) => b.xidAge - a.xidAge || (b.ageSeconds ?? 0) - (a.ageSeconds ?? 0)).slice(0, 5);
}

interface TableRow {
  table: string;
  n_live_tup: number | null;
  n_dead_tup: number | null;
  last_vacuum: PgTimestamp | null;
  last_autovacuum: PgTimestamp | null;
  last_analyze: PgTimestamp | null;
  last_autoanalyze: PgTimestamp | null;
  table_bytes: number;
  index_bytes: number;
  expected_bytes: number | null;
}

async function readTables(executor: Executor): Promise<TableHealth[]> {
  // The bloat estimate: the pages the rows would fill at the table's fillfactor (planner's row
  // count × the statistics' average row width plus the tuple header), subtracted from the
  // pages it has; without statistics (never analysed), the dead rows' share of its bytes.
  const rows = await run<TableRow>(
    executor,
    sql`WITH widths AS (
          SELECT s.tablename, sum(s.avg_width)::float8 AS width
          FROM pg_catalog.pg_stats s WHERE s.schemaname = 'leasehold' GROUP BY s.tablename
        )
        SELECT c.relname AS table, t.n_live_tup, t.n_dead_tup, t.last_vacuum, t.last_autovacuum, t.last_analyze,
               t.last_autoanalyze, pg_relation_size(c.oid)::float8 AS table_bytes, pg_indexes_size(c.oid)::float8 AS index_bytes,
               CASE WHEN w.width IS NOT NULL AND c.reltuples >= 0 THEN
                 ceil(c.reltuples * (w.width + 28) / greatest(1, current_setting('block_size')::int
                   * coalesce((SELECT substring(o FROM 12)::int FROM unnest(c.reloptions) AS o WHERE o LIKE 'fillfactor=%'), 100) / 100 - 24))
                   * current_setting('block_size')::int
               END::float8 AS expected_bytes
        FROM pg_catalog.pg_class c
        JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace AND n.nspname = 'leasehold'
        LEFT JOIN pg_catalog.pg_stat_user_tables t ON t.relid = c.oid
        LEFT JOIN widths w ON w.tablename = c.relname
        WHERE c.relkind IN ('r', 'p')
        ORDER BY c.relname`,
  );
  return rows.map((r) => {
    const live = Number(r.n_live_tup ?? 0);
    const dead = Number(r.n_dead_tup ?? 0);
    const bytes = Number(r.table_bytes);
    const byDead = live + dead === 0 ? 0 : (bytes * dead) / (live + dead);
    const bloat = r.expected_bytes === null ? byDead : Math.max(0, bytes - Number(r.expected_bytes));
    return {
      table: r.table,
      liveTuples: live,
      deadTuples: dead,
      lastVacuum: toDateOrNull(r.last_vacuum),
      lastAutovacuum: toDateOrNull(r.last_autovacuum),
      lastAnalyze: toDateOrNull(r.last_analyze),
      lastAutoanalyze: toDateOrNull(r.last_autoanalyze),
      tableBytes: bytes,
      indexBytes: Number(r.index_bytes),
      bloatBytes: Math.round(bloat),
    };
  });
}

interface ServerRow {
  autovacuum: string;
  track_counts: string;
  notify_usage: number;
  max_connections: number;
  readable: boolean;
  hidden: number;
  role: string;
  connections: { application: string; count: number }[];
}

async function readServer(executor: Executor): Promise<ServerRow> {
  const [row] = await run<ServerRow>(
    executor,
    sql`SELECT current_setting('autovacuum') AS autovacuum, current_setting('track_counts') AS track_counts,
               pg_catalog.pg_notification_queue_usage()::float8 AS notify_usage,
               current_setting('max_connections')::int AS max_connections,
               pg_has_role(current_user, 'pg_read_all_stats', 'USAGE') AS readable, current_user AS role,
               (SELECT count(*)::int FROM pg_catalog.pg_stat_activity a
                WHERE a.pid <> pg_backend_pid() AND a.query = '<insufficient privilege>') AS hidden,
               (SELECT coalesce(jsonb_agg(jsonb_build_object('application', c.application, 'count', c.n) ORDER BY c.n DESC, c.application), '[]')
                FROM (SELECT coalesce(a.application_name, '') AS application, count(*)::int AS n
                      FROM pg_catalog.pg_stat_activity a
                      -- Another user's session shows no backend_type to a role without pg_read_all_stats.
                      WHERE a.backend_type = 'client backend' OR (a.backend_type IS NULL AND a.usesysid IS NOT NULL)
                      GROUP BY 1) c) AS connections`,
  );
  return row!;
}

const check = (check: CheckId, title: string, state: CheckState, sentence: string): HealthCheck => ({
  check,
  title,
  state,
  sentence,
});

/**
 * The health read: four statements over the catalogs, whatever the number of jobs. `admin`: the
 * holders' client addresses and queries too. `thresholds`: HEALTH_THRESHOLDS unless given.
 */
export async function readHealth(
  executor: Executor,
  options: { admin: boolean; thresholds?: Partial<HealthThresholds> },
): Promise<Health> {
  const limits = { ...HEALTH_THRESHOLDS, ...options.thresholds };
  // The holders first and alone: a statement of this read running meanwhile on another of the
  // pool's connections would hold an xmin of its own and be named.
  const holders = await readHolders(executor, options.admin);
  const [tables, server] = await Promise.all([readTables(executor), readServer(executor)]);
  const grantHint = `GRANT pg_monitor TO ${server.role}; (or, narrower, GRANT pg_read_all_stats TO ${server.role};)`;
  const activityReadable = server.readable || server.hidden === 0;
  const autovacuum = server.autovacuum === 'on' && server.track_counts === 'on';
  const deadTotal = tables.reduce((n, t) => n + t.deadTuples, 0);
  const checks: HealthCheck[] = [];

  checks.push(
    autovacuum
      ? check(
          'autovacuum',
          'Autovacuum',
          'ok',
          'autovacuum is on: it removes the dead rows every claim and acknowledgement leaves.',
        )
      : check(
          'autovacuum',
          'Autovacuum',
          'critical',
          server.autovacuum !== 'on'
            ? `autovacuum is off on this server: nothing removes the dead rows the queue leaves (${count(deadTotal)} now) unless someone runs VACUUM. Set autovacuum = on.`
            : 'track_counts is off: autovacuum cannot tell which tables need it. Set track_counts = on.',
        ),
  );

  const holder = holders[0];
  const hState = holder ? holderState(holder, limits) : 'ok';
  const deadText =
    deadTotal > 0 ? `autovacuum cannot remove ${count(deadTotal)} dead rows of Leasehold's tables: ` : '';
  // Another user's session shows its pid, application name and xids to any role, but its
  // transaction's start and state only to one with pg_read_all_stats.
  const hidden = holder?.holder === 'session' && holder.ageSeconds === null;
  checks.push(
    hidden
      ? check(
          'horizon',
          'Oldest xmin horizon',
          'unreadable',
          `${holderText(holder)}; how long it has been open is not readable with this role's grants: ${grantHint}`,
        )
      : holder && hState !== 'ok'
        ? check('horizon', 'Oldest xmin horizon', hState, `${deadText}${holderText(holder)}.`)
        : check(
            'horizon',
            'Oldest xmin horizon',
            'ok',
            holder
              ? `the oldest horizon is held by ${holderText(holder)}: within bounds.`
              : 'nothing holds the horizon back.',
          ),
  );

  const worst = tables
    .filter((t) => t.deadTuples >= limits.deadTuplesFloor)
    .map((t) => ({ t, share: t.deadTuples / Math.max(1, t.deadTuples + t.liveTuples) }))
    .sort((a, b) => b.share - a.share)[0];
  const dState = worst ? stateOf(worst.share, limits.deadShare) : 'ok';
  checks.push(
    check(
      'dead_tuples',
      'Dead rows',
      dState,
      worst && dState !== 'ok'
        ? `${worst.t.table} holds ${count(worst.t.deadTuples)} dead rows (${Math.round(worst.share * 100)} % of its rows); last vacuumed ${lastVacuumText(worst.t)}.`
        : `${count(deadTotal)} dead rows in all Leasehold tables: vacuum keeps up.`,
    ),
  );

  const nState = stateOf(server.notify_usage, limits.notifyUsage);
  checks.push(
    check(
      'notify_queue',
      'NOTIFY queue',
      nState,
      nState === 'ok'
        ? `${(server.notify_usage * 100).toFixed(1)} % of the NOTIFY queue in use.`
        : `${(server.notify_usage * 100).toFixed(1)} % of the NOTIFY queue in use: a listening session in a long transaction keeps it from emptying${nState === 'critical' ? '; enqueues send no wake-ups now, and workers find jobs by polling' : ''}.`,
    ),
  );

  const total = server.connections.reduce((n, c) => n + c.count, 0);
  const share = total / Math.max(1, server.max_connections);
  const cState = stateOf(share, limits.connectionShare);
  const top = server.connections[0];
  checks.push(
    check(
      'connections',
      'Connections',
      cState,
      `${total} of ${server.max_connections} connections in use${top ? `, the most from \`${top.application || 'no application name'}\` (${top.count})` : ''}${cState === 'ok' ? '.' : ': a pooler (PgBouncer in transaction mode) or smaller pools keep new connections from being refused.'}`,
    ),
  );

  const rank = Math.max(...checks.map((c) => RANK[c.state]));
  return {
    generatedAt: new Date(),
    state: rank === 2 ? 'critical' : rank === 1 ? 'warning' : 'ok',
    checks,
    tables,
    holders,
    autovacuum,
    notifyQueueUsage: server.notify_usage,
    maxConnections: server.max_connections,
    connections: server.connections,
    activityReadable,
    grantHint,
  };
}

function lastVacuumText(t: TableHealth): string {
  const last = [t.lastVacuum, t.lastAutovacuum].filter((d): d is Date => d !== null).sort((a, b) => +b - +a)[0];
  return last ? `${duration((Date.now() - last.getTime()) / 1000)} ago` : 'never';
}

/** The exit code of `leasehold health`: 0 ok, 1 warning, 2 critical. */
export const healthExitCode = (health: Pick<Health, 'state'>) =>
  health.state === 'critical' ? 2 : health.state === 'warning' ? 1 : 0;
