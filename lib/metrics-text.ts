/**
 * Prometheus text exposition (format 0.0.4) of the metrics DTO: depth by queue and (sub-)state,
 * completions in the last hour, oldest ready age, paused flags, jobs waiting for a kind no live
 * worker runs, dead jobs by class, the NOTIFY queue's usage, limits, fair groups, schedules,
 * the backlog alerts' thresholds and states, and PostgreSQL's health. The names, order and
 * label spelling are what scrapers, dashboards and deploy/prometheus/leasehold-rules.yml already
 * query: change none lightly (deploy/prometheus/rules.test.ts fails when a rule's metric is gone).
 */
import type {
  AlertMetricsDTO,
  GroupMetricsDTO,
  HealthMetricsDTO,
  MetricsDTO,
  QueueDTO,
  ScheduleMetricsDTO,
} from './dto.ts';

const label = (value: string) => value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');

/** The backlog's sub-state counts, by their metric label. */
const STATE_LABELS = [
  ['ready', 'ready'],
  ['scheduled', 'scheduled'],
  ['retrying', 'retrying'],
  ['running', 'running'],
  ['leaseExpired', 'lease_expired'],
  ['dead', 'dead'],
  ['cancelled', 'cancelled'],
] as const satisfies readonly (readonly [keyof QueueDTO, string])[];

export function metricsText({
  queues,
  dead,
  notifyQueueUsage,
  limits,
  groups,
  schedules,
  alerts,
  health,
}: MetricsDTO): string {
  const lines = [
    '# HELP leasehold_queue_jobs Jobs by queue and (sub-)state.',
    '# TYPE leasehold_queue_jobs gauge',
    ...queues.flatMap((q) =>
      STATE_LABELS.map(([key, state]) => `leasehold_queue_jobs{queue="${label(q.queue)}",state="${state}"} ${q[key]}`),
    ),
    '# HELP leasehold_queue_done_last_hour Jobs completed in the last hour.',
    '# TYPE leasehold_queue_done_last_hour gauge',
    ...queues.map((q) => `leasehold_queue_done_last_hour{queue="${label(q.queue)}"} ${q.doneLastHour}`),
    '# HELP leasehold_queue_oldest_ready_age_seconds Age of the oldest due ready job (queue lag).',
    '# TYPE leasehold_queue_oldest_ready_age_seconds gauge',
    ...queues.map(
      (q) => `leasehold_queue_oldest_ready_age_seconds{queue="${label(q.queue)}"} ${q.oldestReadyAgeSeconds ?? 0}`,
    ),
    '# HELP leasehold_queue_paused Whether the queue is paused.',
    '# TYPE leasehold_queue_paused gauge',
    ...queues.map((q) => `leasehold_queue_paused{queue="${label(q.queue)}"} ${q.paused ? 1 : 0}`),
    '# HELP leasehold_queue_jobs_waiting_for_kind Ready jobs whose kind version no live worker runs.',
    '# TYPE leasehold_queue_jobs_waiting_for_kind gauge',
    ...queues.map((q) => `leasehold_queue_jobs_waiting_for_kind{queue="${label(q.queue)}"} ${q.waitingForKind}`),
    '# HELP leasehold_dead_jobs Dead jobs by queue and failure class.',
    '# TYPE leasehold_dead_jobs gauge',
    ...dead.map(
      (d) => `leasehold_dead_jobs{queue="${label(d.queue)}",failure_class="${label(d.failureClass)}"} ${d.count}`,
    ),
    '# HELP leasehold_notify_queue_usage Share of the server’s NOTIFY queue in use (0 to 1); at 0.5 or more enqueues send no wake-ups.',
    '# TYPE leasehold_notify_queue_usage gauge',
    `leasehold_notify_queue_usage ${notifyQueueUsage}`,
    '# HELP leasehold_limit_max The maximum of attempts a limit lets hold a lease at once (absent: no maximum).',
    '# TYPE leasehold_limit_max gauge',
    ...limits.flatMap((l) => (l.max === null ? [] : [`leasehold_limit_max{limit="${label(l.limit)}"} ${l.max}`])),
    '# HELP leasehold_limit_running Attempts holding a lease under a limit.',
    '# TYPE leasehold_limit_running gauge',
    ...limits.map((l) => `leasehold_limit_running{limit="${label(l.limit)}"} ${l.running}`),
    '# HELP leasehold_limit_waiting Ready, due jobs that count toward a limit (counted up to 100,000).',
    '# TYPE leasehold_limit_waiting gauge',
    ...limits.map((l) => `leasehold_limit_waiting{limit="${label(l.limit)}"} ${l.waiting}`),
    "# HELP leasehold_limit_starts_left Starts a limit's rate leaves in its current window (absent: no rate).",
    '# TYPE leasehold_limit_starts_left gauge',
    ...limits.flatMap((l) =>
      l.startsLeft === null ? [] : [`leasehold_limit_starts_left{limit="${label(l.limit)}"} ${l.startsLeft}`],
    ),
    '# HELP leasehold_limit_paused Whether a RateLimitedError paused the limit.',
    '# TYPE leasehold_limit_paused gauge',
    ...limits.map((l) => `leasehold_limit_paused{limit="${label(l.limit)}"} ${l.paused ? 1 : 0}`),
    ...groupLines(groups),
    ...scheduleLines(schedules),
    ...alertLines(alerts),
    ...healthLines(health),
    ...tableLines(health.tables),
    ...serverLines(health),
  ];
  return `${lines.join('\n')}\n`;
}

/**
 * The fair groups' series: per queue, its first groups by oldest waiting job by name
 * (`group="…"`), and the rest summed in one series with no `group` label and `other="true"`
 * (no group key is empty, so no group's series is ever that one, whatever its name), so the
 * series per queue stay bounded however many tenants it has.
 */
function groupLines(groups: readonly GroupMetricsDTO[]): string[] {
  const labels = (g: GroupMetricsDTO) =>
    g.group === null ? `queue="${label(g.queue)}",other="true"` : `queue="${label(g.queue)}",group="${label(g.group)}"`;
  return [
    '# HELP leasehold_group_waiting Ready, due jobs of a fair group.',
    '# TYPE leasehold_group_waiting gauge',
    ...groups.map((g) => `leasehold_group_waiting{${labels(g)}} ${g.waiting}`),
    '# HELP leasehold_group_running Jobs of a fair group holding a lease.',
    '# TYPE leasehold_group_running gauge',
    ...groups.map((g) => `leasehold_group_running{${labels(g)}} ${g.running}`),
    "# HELP leasehold_group_oldest_waiting_seconds Age of a fair group's oldest due ready job (the other series: the oldest of the rest).",
    '# TYPE leasehold_group_oldest_waiting_seconds gauge',
    ...groups.map((g) => `leasehold_group_oldest_waiting_seconds{${labels(g)}} ${g.oldestWaitingSeconds}`),
    "# HELP leasehold_group_max The maximum of a fair group's jobs running at once (its own, else its queue's default; absent: none).",
    '# TYPE leasehold_group_max gauge',
    ...groups.flatMap((g) => (g.max === null ? [] : [`leasehold_group_max{${labels(g)}} ${g.max}`])),
    '# HELP leasehold_group_paused Whether an operator paused the fair group.',
    '# TYPE leasehold_group_paused gauge',
    ...groups.flatMap((g) => (g.group === null ? [] : [`leasehold_group_paused{${labels(g)}} ${g.paused ? 1 : 0}`])),
  ];
}

/** The schedules' series, one per schedule (their number is the code's and the admins' to bound). */
function scheduleLines(schedules: readonly ScheduleMetricsDTO[]): string[] {
  const name = (s: ScheduleMetricsDTO) => `schedule="${label(s.schedule)}"`;
  return [
    "# HELP leasehold_schedule_last_tick_age_seconds Seconds since a schedule's last enqueued tick (absent: none yet).",
    '# TYPE leasehold_schedule_last_tick_age_seconds gauge',
    ...schedules.flatMap((s) =>
      s.lastTickAgeSeconds === null
        ? []
        : [`leasehold_schedule_last_tick_age_seconds{${name(s)}} ${s.lastTickAgeSeconds}`],
    ),
    "# HELP leasehold_schedule_overdue_seconds Seconds a schedule's next due tick has waited for a worker (no scheduler running when it grows).",
    '# TYPE leasehold_schedule_overdue_seconds gauge',
    ...schedules.map((s) => `leasehold_schedule_overdue_seconds{${name(s)}} ${s.overdueSeconds}`),
    '# HELP leasehold_schedule_paused Whether an admin paused the schedule.',
    '# TYPE leasehold_schedule_paused gauge',
    ...schedules.map((s) => `leasehold_schedule_paused{${name(s)}} ${s.paused ? 1 : 0}`),
  ];
}

/** The backlog alerts' series, per queue and alert: the threshold in force and whether it is reached. */
function alertLines(alerts: readonly AlertMetricsDTO[]): string[] {
  const labels = (a: AlertMetricsDTO) => `queue="${label(a.queue)}",alert="${label(a.alert)}"`;
  return [
    "# HELP leasehold_queue_alert_threshold A queue's backlog alert threshold in force (LEASEHOLD_QUEUE_ALERTS, or an admin's).",
    '# TYPE leasehold_queue_alert_threshold gauge',
    ...alerts.map((a) => `leasehold_queue_alert_threshold{${labels(a)}} ${a.threshold}`),
    "# HELP leasehold_queue_alert_firing Whether the queue's figure is at or over the alert's threshold.",
    '# TYPE leasehold_queue_alert_firing gauge',
    ...alerts.map((a) => `leasehold_queue_alert_firing{${labels(a)}} ${a.firing ? 1 : 0}`),
  ];
}

/** A health check's state as a number; `unreadable` has none (no series). */
const CHECK_STATES = { ok: 0, warning: 1, critical: 2, unreadable: null } as const;

/** The health checks' states, one series per check the role could read. */
function healthLines({ checks }: HealthMetricsDTO): string[] {
  return [
    "# HELP leasehold_health_check_state A health check's state: 0 ok, 1 warning, 2 critical (absent: not readable).",
    '# TYPE leasehold_health_check_state gauge',
    ...checks.flatMap((c) => {
      const state = CHECK_STATES[c.state];
      return state === null ? [] : [`leasehold_health_check_state{check="${label(c.check)}"} ${state}`];
    }),
  ];
}

/** Each Leasehold table's tuples, size and estimated bloat. */
function tableLines(tables: HealthMetricsDTO['tables']): string[] {
  const name = (t: HealthMetricsDTO['tables'][number]) => `table="${label(t.table)}"`;
  return [
    '# HELP leasehold_pg_table_live_tuples Live tuples of a Leasehold table (the statistics’ estimate).',
    '# TYPE leasehold_pg_table_live_tuples gauge',
    ...tables.map((t) => `leasehold_pg_table_live_tuples{${name(t)}} ${t.liveTuples}`),
    '# HELP leasehold_pg_table_dead_tuples Dead tuples of a Leasehold table, not yet vacuumed.',
    '# TYPE leasehold_pg_table_dead_tuples gauge',
    ...tables.map((t) => `leasehold_pg_table_dead_tuples{${name(t)}} ${t.deadTuples}`),
    '# HELP leasehold_pg_table_bytes Size of a Leasehold table with its indexes and TOAST.',
    '# TYPE leasehold_pg_table_bytes gauge',
    ...tables.map((t) => `leasehold_pg_table_bytes{${name(t)}} ${t.bytes}`),
    '# HELP leasehold_pg_table_bloat_bytes Estimated bytes of a Leasehold table that dead tuples take.',
    '# TYPE leasehold_pg_table_bloat_bytes gauge',
    ...tables.map((t) => `leasehold_pg_table_bloat_bytes{${name(t)}} ${t.bloatBytes}`),
  ];
}

/** The server's figures: the xmin horizon (absent when not readable), autovacuum, connections. */
function serverLines({ horizonAgeSeconds, horizonXidAge, autovacuum, connections }: HealthMetricsDTO): string[] {
  return [
    '# HELP leasehold_pg_horizon_age_seconds Seconds the transaction holding the oldest xmin has been open (absent: none, or not readable).',
    '# TYPE leasehold_pg_horizon_age_seconds gauge',
    ...(horizonAgeSeconds === null ? [] : [`leasehold_pg_horizon_age_seconds ${horizonAgeSeconds}`]),
    '# HELP leasehold_pg_horizon_xid_age Transactions between the oldest xmin held and now (absent: not readable).',
    '# TYPE leasehold_pg_horizon_xid_age gauge',
    ...(horizonXidAge === null ? [] : [`leasehold_pg_horizon_xid_age ${horizonXidAge}`]),
    '# HELP leasehold_pg_autovacuum_enabled Whether the server runs autovacuum.',
    '# TYPE leasehold_pg_autovacuum_enabled gauge',
    `leasehold_pg_autovacuum_enabled ${autovacuum ? 1 : 0}`,
    '# HELP leasehold_pg_connections Connections to the server by application name.',
    '# TYPE leasehold_pg_connections gauge',
    ...connections.map((c) => `leasehold_pg_connections{application="${label(c.application)}"} ${c.count}`),
  ];
}
