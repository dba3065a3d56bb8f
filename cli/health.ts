/**
 * `leasehold health [--json]`: PostgreSQL's health as the queue sees it (db/queries/health.ts)
 * and the queues' backlog alerts (db/queue/alerts.ts), for a shell, a cron job or a monitoring
 * agent. Exit code 0 when every check is ok and no alert fires, 1 on a warning (or a check this
 * login cannot read, or a firing alert), 2 on a critical check; docs/operations.md, "Reading the
 * health page", says what each check means and what to do.
 */
import { evaluateAlerts, listQueueAlerts, parseAlertConfig } from '../db/queue/alerts.ts';
import { healthExitCode, readHealth } from '../db/queries/health.ts';
import { backlog } from '../db/queries/overview.ts';
import { type Command, EMBEDDED_HELP, parseCommandArgs, textTable, UsageError } from './command.ts';
import { withDb } from './database.ts';
import { systemTimeZone, whenText } from '../lib/time-format.ts';

const HELP = `usage: leasehold health [--json]

PostgreSQL's health as the queue sees it: whether autovacuum runs, what holds the oldest xmin
horizon (a session's open transaction, a replication slot, a prepared transaction) and the
dead rows it keeps, each Leasehold table's live and dead rows, last vacuum and size, the NOTIFY
queue and the connections by application name; then each queue's backlog alerts
(LEASEHOLD_QUEUE_ALERTS and the admins' run-time thresholds).

  --json     the whole read as JSON (checks, holders, tables, connections, alerts)
${EMBEDDED_HELP}
  --help, --version

exit code: 0 ok, 1 warning (a check at warning or not readable, or an alert firing), 2 critical
environment: DATABASE_URL (required unless --embedded), LEASEHOLD_QUEUE_ALERTS`;

const OPTIONS = { json: { type: 'boolean' }, embedded: { type: 'boolean' } } as const;

const MARK = { ok: 'ok', warning: 'WARNING', critical: 'CRITICAL', unreadable: 'NOT READABLE' } as const;

const bytes = (n: number) =>
  n >= 1024 ** 3
    ? `${(n / 1024 ** 3).toFixed(1)} GiB`
    : n >= 1024 ** 2
      ? `${(n / 1024 ** 2).toFixed(1)} MiB`
      : `${Math.round(n / 1024)} KiB`;

export const healthCommand: Command = {
  name: 'health',
  help: HELP,
  async run(args, context) {
    const { values, positionals } = parseCommandArgs('health', args, OPTIONS, true);
    if (positionals.length > 0) {
      throw new UsageError(`unexpected argument ${JSON.stringify(positionals[0])} (leasehold health --help)`);
    }
    let config;
    try {
      config = parseAlertConfig(context.env.LEASEHOLD_QUEUE_ALERTS);
    } catch (error) {
      throw new UsageError(error instanceof Error ? error.message : String(error));
    }
    const { health, alerts } = await withDb(context, values.embedded === true, async ({ db }) => {
      const [read, queues, stored] = await Promise.all([
        readHealth(db, { admin: true }),
        backlog(db),
        listQueueAlerts(db),
      ]);
      return { health: read, alerts: evaluateAlerts(queues, config, stored) };
    });
    const firing = alerts.filter((a) => a.firing);
    const code = Math.max(healthExitCode(health), firing.length > 0 ? 1 : 0);
    if (values.json === true) {
      console.log(JSON.stringify({ ...health, alerts, exitCode: code }, null, 2));
      return code;
    }
    console.log(`health: ${MARK[health.state]}${firing.length > 0 ? `, ${firing.length} alert(s) firing` : ''}`);
    console.log(
      textTable([['CHECK', 'STATE', 'WHAT'], ...health.checks.map((c) => [c.title, MARK[c.state], c.sentence])]),
    );
    console.log('');
    const zone = systemTimeZone();
    const now = Date.now();
    console.log(
      textTable([
        ['TABLE', 'LIVE', 'DEAD', 'LAST VACUUM', 'LAST AUTOVACUUM', 'SIZE', 'INDEXES', 'BLOAT (EST.)'],
        ...health.tables.map((t) => [
          t.table,
          String(t.liveTuples),
          String(t.deadTuples),
          whenText(t.lastVacuum, zone, now),
          whenText(t.lastAutovacuum, zone, now),
          bytes(t.tableBytes),
          bytes(t.indexBytes),
          bytes(t.bloatBytes),
        ]),
      ]),
    );
    if (alerts.length > 0) {
      console.log('');
      console.log(
        textTable([
          ['QUEUE', 'ALERT', 'THRESHOLD', 'NOW', 'FROM', 'STATE'],
          ...alerts.map((a) => [
            a.queue,
            a.alert,
            String(a.threshold),
            String(Math.round(a.value * 10) / 10),
            a.source,
            a.firing ? 'FIRING' : 'ok',
          ]),
        ]),
      );
      for (const a of firing) console.log(a.sentence);
    }
    return code;
  },
};
