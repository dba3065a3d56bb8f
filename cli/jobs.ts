/**
 * `leasehold jobs`: the newest jobs as a short table (db/queries/jobs.ts listJobs, the dashboard's
 * list); `leasehold jobs <id>`: one job, with its result and progress (jobDetail, the job page's).
 */
import { jobDetail, jobListSchema, LIST_STATES, listJobs, type JobWithOutcome } from '../db/queries/jobs.ts';
import { MAX_TAG_LENGTH } from '../db/queue/enqueue-spec.ts';
import { problemsOf, uuidSchema } from '../db/queue/validate.ts';
import { subStateOf } from '../db/states.ts';
import { type Command, EMBEDDED_HELP, parseCommandArgs, textTable, UsageError } from './command.ts';
import { withDb } from './database.ts';
import { systemTimeZone, whenText } from '../lib/time-format.ts';

const HELP = `usage: leasehold jobs [--state STATE] [--queue QUEUE] [--kind KIND] [--tag TAG] [--limit N]
       leasehold jobs <id>

Prints the newest jobs (newest first) as a table: id, queue, kind, state (as the dashboard's
badge shows it: scheduled and retrying are ready jobs, lease_expired a running one), the
charged attempts against the cap that applies (ATTEMPTS), which cap that is (CAP BY: handler,
job or limit), the attempts handed back, released or snoozed and not charged (UNCHARGED), when
it was created, when it may run, and its tags (comma-separated).

With a job's id, prints that job instead: its state, attempts, times, tags and last error, what
its handler returned (the result as JSON, as stored: not masked; or the marker saying why it
was not stored; or none) and its latest progress report (percentage, message, attempt, when).

  --state STATE   one of ${LIST_STATES.join(', ')}
  --queue QUEUE   only this queue
  --kind KIND     only this kind
  --tag TAG       only jobs with this tag (exact: 1 to ${MAX_TAG_LENGTH} characters)
  --limit N       at most N rows (default 20, at most 200)
  --oldest        oldest first
${EMBEDDED_HELP}
  --help, --version

environment: DATABASE_URL (required unless --embedded)`;

const OPTIONS = {
  state: { type: 'string' },
  queue: { type: 'string' },
  kind: { type: 'string' },
  tag: { type: 'string' },
  limit: { type: 'string' },
  oldest: { type: 'boolean' },
  embedded: { type: 'boolean' },
} as const;

export const jobsCommand: Command = {
  name: 'jobs',
  help: HELP,
  async run(args, context) {
    const { values, positionals } = parseCommandArgs('jobs', args, OPTIONS, true);
    if (positionals.length > 0) return showJob(positionals, values, context);
    const parsed = jobListSchema.safeParse({
      state: values.state,
      queue: values.queue,
      kind: values.kind,
      tag: values.tag,
      limit: values.limit ?? 20,
      sort: values.oldest ? 'oldest' : 'newest',
    });
    if (!parsed.success)
      throw new UsageError(
        problemsOf(parsed.error)
          .map((p) => `--${p}`)
          .join('; '),
      );
    const { jobs, next } = await withDb(context, values.embedded === true, ({ db }) => listJobs(db, parsed.data));
    if (jobs.length === 0) {
      console.log('no jobs match');
      return 0;
    }
    const now = Date.now();
    const zone = systemTimeZone();
    const rows = [
      ['ID', 'QUEUE', 'KIND', 'STATE', 'ATTEMPTS', 'CAP BY', 'UNCHARGED', 'CREATED', 'RUN AT', 'TAGS'],
      ...jobs.map((j) => [
        j.id,
        j.queue,
        j.kind,
        subStateOf(j, now),
        `${j.budget.charged}/${j.budget.cap}`,
        j.budget.source,
        String(j.budget.released),
        whenText(j.createdAt, zone, now),
        whenText(j.runAt, zone, now),
        j.tags.join(','),
      ]),
    ];
    console.log(textTable(rows));
    if (next) console.log(`(more: raise --limit, or filter with --state/--queue/--kind/--tag)`);
    return 0;
  },
};

const FILTER_FLAGS = ['state', 'queue', 'kind', 'tag', 'limit', 'oldest'] as const;

/** A C0 or C1 control character, or DEL: what a terminal may take for a command. */
const isControl = (c: number) => c < 0x20 || (c >= 0x7f && c <= 0x9f);

/** Text a handler wrote (a progress message, an error, a result), with control characters spelled out (`\u001b`). */
function printable(text: string): string {
  let out = '';
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    out += isControl(c) ? `\\u${c.toString(16).padStart(4, '0')}` : text.charAt(i);
  }
  return out;
}

/** `leasehold jobs <id>`: one job, its result (or marker, or none) and its progress line. */
async function showJob(
  positionals: string[],
  values: Partial<Record<(typeof FILTER_FLAGS)[number] | 'embedded', string | boolean>>,
  context: Parameters<Command['run']>[1],
): Promise<number> {
  const [id, ...rest] = positionals;
  if (rest.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(rest[0])} (leasehold jobs --help)`);
  const given = FILTER_FLAGS.find((f) => values[f] !== undefined);
  if (given) throw new UsageError(`a job's id takes no --${given} (leasehold jobs --help)`);
  if (id === undefined || !uuidSchema.safeParse(id).success)
    throw new UsageError(`${JSON.stringify(id)} is not a job id (a UUID) (leasehold jobs --help)`);
  const found = await withDb(context, values.embedded === true, ({ db }) => jobDetail(db, id));
  if (!found) {
    console.error(`leasehold jobs: no job ${id}`);
    return 1;
  }
  console.log(jobText(found));
  return 0;
}

/** One job as `leasehold jobs <id>` prints it: a line per field, the result and the progress last. */
export function jobText({ job, result, progress }: JobWithOutcome, now = Date.now(), zone = systemTimeZone()): string {
  // The machine's zone (TZ=UTC for UTC), the absolute time first: `2026-12-07 14:03:27 UTC+13 (3 min ago)`.
  const when = (d: Date | null) => whenText(d, zone, now);
  const fields: [string, string][] = [
    ['queue', job.queue],
    ['kind', `${job.kind} v${job.kindVersion}`],
    ['state', subStateOf(job, now)],
    [
      'attempts',
      `${job.budget.charged}/${job.budget.cap} charged (cap by ${job.budget.source}), ${job.budget.released} not charged`,
    ],
    ['created', when(job.createdAt)],
    ['run at', when(job.runAt)],
    ['started', when(job.startedAt)],
    ['finished', when(job.finishedAt)],
    ['tags', job.tags.length === 0 ? '-' : job.tags.join(',')],
    ...(job.lastError === null ? [] : [['last error', printable(job.lastError)] satisfies [string, string]]),
    [
      'result',
      result === null
        ? job.state === 'done'
          ? 'none (its handler returned nothing)'
          : 'none yet'
        : `${printable(result.marker ?? JSON.stringify(result.value))} (attempt ${result.attempt}, ${result.bytes} bytes, stored ${when(result.storedAt)})`,
    ],
    [
      'progress',
      progress === null
        ? 'none reported'
        : `${Math.round(progress.fraction * 100)} %${progress.message === null ? '' : ` ${printable(progress.message)}`} (attempt ${progress.attempt}, updated ${when(progress.updatedAt)})`,
    ],
  ];
  const width = Math.max(...fields.map(([k]) => k.length));
  return [`job ${job.id}`, ...fields.map(([k, v]) => `  ${k.padEnd(width)}  ${v}`)].join('\n');
}
