/** `leasehold schedules`: list, show, create, change, pause, resume, reset and delete schedules (docs/scheduling.md). */
import {
  changeSchedule,
  createSchedule,
  deleteSchedule,
  getSchedule,
  listSchedules,
  pauseSchedule,
  recentTicks,
  resetSchedule,
  resumeSchedule,
  type RuntimeScheduleInput,
  type ScheduleChange,
  type ScheduleView,
} from '../db/queue/index.ts';
import { type Command, EMBEDDED_HELP, parseCommandArgs, textTable, UsageError } from './command.ts';
import { withDb } from './database.ts';
import { systemTimeZone, whenText } from '../lib/time-format.ts';

const HELP = `usage: leasehold schedules
       leasehold schedules show <name> [--ticks N]
       leasehold schedules create <name> --kind KIND --cron EXPR [settings] --actor WHO [--reason TEXT]
       leasehold schedules change <name> [settings] --actor WHO [--reason TEXT]
       leasehold schedules pause|resume|reset|delete <name> --actor WHO [--reason TEXT]

Recurring jobs (docs/scheduling.md): each schedule enqueues a job of its kind at each tick of
its cron expression, once per tick however many workers run.

  (none)   every schedule: its expression and zone, next and last ticks, the last job's state
  show     one schedule's settings and its recent ticks (--ticks, default 20, at most 100)
  create   a schedule made at run time, of a kind a worker has declared; audited
  change   the settings given replace the schedule's own; the code's declaration no longer
           applies to it until reset; a new expression takes effect at its next tick
  pause    no tick is enqueued until it is resumed
  resume   ticks start again from the next one (the paused ones are not run)
  reset    back to what the code declares
  delete   the schedule and its ticks (one the code still declares comes back at the next
           worker start: take it out of the code first, or pause it)

settings:
  --kind KIND            the job kind (create; --kind-version N, default 1)
  --cron EXPR            5 fields, or 6 with seconds first ("0 3 * * *", "*/10 * * * * *")
  --timezone ZONE        IANA time zone (default UTC)
  --payload JSON         the jobs' payload (default {})
  --queue NAME           default: the kind's queue
  --missed skip|once|N   missed ticks: none, the newest, or the newest N (default once)
  --overlap allow|skip   skip a tick while the previous tick's job has not ended
  --start-within-ms N    discard a tick's job not started within N ms of its tick
  --actor WHO            who makes the change, for the audit log
  --reason TEXT          why, for the audit log
${EMBEDDED_HELP}
  --help, --version

environment: DATABASE_URL (required unless --embedded)`;

const OPTIONS = {
  kind: { type: 'string' },
  'kind-version': { type: 'string' },
  cron: { type: 'string' },
  timezone: { type: 'string' },
  payload: { type: 'string' },
  queue: { type: 'string' },
  missed: { type: 'string' },
  overlap: { type: 'string' },
  'start-within-ms': { type: 'string' },
  ticks: { type: 'string' },
  actor: { type: 'string' },
  reason: { type: 'string' },
  embedded: { type: 'boolean' },
} as const;

const ACTIONS = ['show', 'create', 'change', 'pause', 'resume', 'reset', 'delete'] as const;
type Action = (typeof ACTIONS)[number];
const ACTION_NAMES = new Set<string>(ACTIONS);
const isAction = (a: string): a is Action => ACTION_NAMES.has(a);
const SETTING_FLAGS = [
  'kind',
  'kind-version',
  'cron',
  'timezone',
  'payload',
  'queue',
  'missed',
  'overlap',
  'start-within-ms',
] as const;

/** A time in the machine's zone (TZ=UTC for UTC), absolute then relative (docs/cli.md, "Times"). */
const when = (d: Date | null) => whenText(d, systemTimeZone(), Date.now());

const VERDICTS: Record<Exclude<ScheduleChange['verdict'], 'applied'>, string> = {
  exists: 'a schedule of that name exists (change it instead)',
  not_found: 'no schedule has that name',
  not_declared: 'no code declares it, so there is nothing to reset to',
};

export const schedulesCommand: Command = {
  name: 'schedules',
  help: HELP,
  async run(args, context) {
    const { values, positionals } = parseCommandArgs('schedules', args, OPTIONS, true);
    const [action, name, ...rest] = positionals;
    const embedded = values.embedded === true;
    const usage = (why: string) => new UsageError(`${why} (leasehold schedules --help)`);
    if (action === undefined) {
      printList(await withDb(context, embedded, ({ db }) => listSchedules(db)));
      return 0;
    }
    if (!isAction(action)) throw usage(`unknown action ${JSON.stringify(action)}`);
    if (name === undefined) throw usage(`${action} needs the schedule's name`);
    if (rest.length > 0) throw usage(`unexpected argument ${JSON.stringify(rest[0])}`);
    const given = SETTING_FLAGS.filter((f) => values[f] !== undefined);
    if (action !== 'create' && action !== 'change' && given.length > 0) throw usage(`${action} takes no --${given[0]}`);
    if (action !== 'show' && values.ticks !== undefined) throw usage(`${action} takes no --ticks`);

    if (action === 'show') {
      const limit = values.ticks === undefined ? 20 : Number(values.ticks);
      if (!Number.isInteger(limit) || limit < 1 || limit > 100)
        throw usage(`--ticks must be a whole number from 1 to 100, not ${JSON.stringify(values.ticks)}`);
      const shown = await withDb(context, embedded, async ({ db }) => {
        const s = await getSchedule(db, name);
        return s && { s, ticks: await recentTicks(db, name, limit) };
      });
      if (!shown) {
        console.error(`leasehold schedules: ${VERDICTS.not_found}: ${name}`);
        return 1;
      }
      const { s, ticks } = shown;
      console.log(
        [
          `schedule ${s.name} (${s.source === 'code' ? 'declared in code' : 'made at run time'}${s.overridden ? ', changed at run time' : ''})`,
          `  kind ${s.kind} v${s.kindVersion} on queue ${s.queue}, payload ${JSON.stringify(s.payload)}`,
          `  cron "${s.cron}" in ${s.timezone}; missed ${s.missed === 'each' ? `each ${s.missedEach}` : s.missed} after ${s.missedAfterMs} ms; overlap ${s.overlap}${s.startWithinMs === null ? '' : `; start within ${s.startWithinMs} ms`}`,
          `  ${s.paused ? `paused${s.pausedReason ? ` (${s.pausedReason})` : ''}` : `next tick ${when(s.nextTickAt)}`}; last tick ${when(s.lastTickAt)} (${s.lastJobState ?? 'no job'})`,
        ].join('\n'),
      );
      if (ticks.length > 0) {
        console.log(
          textTable([
            ['TICK', 'OUTCOME', 'JOB', 'STATE'],
            ...ticks.map((t) => [
              when(t.tickAt),
              t.outcome === 'missed' ? `missed (${t.missedCount})` : t.outcome,
              t.jobId ?? '-',
              t.jobState ?? '-',
            ]),
          ]),
        );
      }
      return 0;
    }

    if (values.actor === undefined) throw usage(`${action} needs --actor (who makes the change, for the audit log)`);
    const who = { actor: values.actor, ...(values.reason === undefined ? {} : { reason: values.reason }) };
    const input: Partial<RuntimeScheduleInput> = {};
    if (values.kind !== undefined) input.kind = values.kind;
    if (values['kind-version'] !== undefined) input.kindVersion = wholeNumber('--kind-version', values['kind-version']);
    if (values.cron !== undefined) input.cron = values.cron;
    if (values.timezone !== undefined) input.timezone = values.timezone;
    if (values.queue !== undefined) input.queue = values.queue;
    if (values.payload !== undefined) {
      try {
        input.payload = JSON.parse(values.payload);
      } catch {
        throw usage(`--payload is not JSON: ${values.payload}`);
      }
    }
    if (values.missed !== undefined) {
      const m = values.missed;
      input.missed = m === 'skip' || m === 'once' ? m : { each: wholeNumber('--missed', m) };
    }
    if (values.overlap !== undefined) {
      if (values.overlap !== 'allow' && values.overlap !== 'skip')
        throw usage(`--overlap must be allow or skip, not ${JSON.stringify(values.overlap)}`);
      input.overlap = values.overlap;
    }
    if (values['start-within-ms'] !== undefined)
      input.startWithinMs = wholeNumber('--start-within-ms', values['start-within-ms']);
    if (action === 'create' && (input.kind === undefined || input.cron === undefined))
      throw usage('create needs --kind and --cron');
    if (action === 'change' && given.length === 0) throw usage('change needs at least one setting to change');

    const outcome = await withDb(context, embedded, ({ db }) => {
      switch (action) {
        case 'create':
          return createSchedule(db, name, { ...input, kind: input.kind!, cron: input.cron! }, who);
        case 'change':
          return changeSchedule(db, name, input, who);
        case 'pause':
          return pauseSchedule(db, name, who);
        case 'resume':
          return resumeSchedule(db, name, who);
        case 'reset':
          return resetSchedule(db, name, who);
        case 'delete':
          return deleteSchedule(db, name, who);
      }
    });
    if (outcome.verdict !== 'applied') {
      console.error(`leasehold schedules: ${action} ${name} refused: ${VERDICTS[outcome.verdict]}`);
      return 1;
    }
    console.log(
      `schedule ${name}: ${action === 'reset' ? 'reset to the code' : `${action}d`} (audit ${outcome.auditId})`,
    );
    return 0;
  },
};

function wholeNumber(flag: string, text: string): number {
  if (!/^\d+$/.test(text))
    throw new UsageError(`${flag} must be a whole number, not ${JSON.stringify(text)} (leasehold schedules --help)`);
  return Number(text);
}

function printList(all: ScheduleView[]): void {
  if (all.length === 0) {
    console.log('no schedules: declare one in code (defineSchedule) or create one');
    return;
  }
  console.log(
    textTable([
      ['NAME', 'KIND', 'CRON', 'ZONE', 'NEXT TICK', 'LAST TICK', 'LAST JOB', 'STATE'],
      ...all.map((s) => [
        s.name,
        s.kind,
        s.cron,
        s.timezone,
        when(s.nextTickAt),
        when(s.lastTickAt),
        s.lastJobState ?? '-',
        [s.paused ? 'paused' : 'active', s.overridden ? 'changed at run time' : ''].filter(Boolean).join(', '),
      ]),
    ]),
  );
}
