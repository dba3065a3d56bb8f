/** `leasehold jobs`: the newest jobs as a short table (db/queries/jobs.ts listJobs, the dashboard's list). */
import { jobListSchema, LIST_STATES, listJobs } from '../db/queries/jobs.ts';
import { MAX_TAG_LENGTH } from '../db/queue/enqueue-spec.ts';
import { problemsOf } from '../db/queue/validate.ts';
import { subStateOf } from '../db/states.ts';
import { type Command, EMBEDDED_HELP, parseCommandArgs, textTable, UsageError } from './command.ts';
import { withDb } from './database.ts';

const HELP = `usage: leasehold jobs [--state STATE] [--queue QUEUE] [--kind KIND] [--tag TAG] [--limit N]

Prints the newest jobs (newest first) as a table: id, queue, kind, state (as the dashboard's
badge shows it: scheduled and retrying are ready jobs, lease_expired a running one), the
charged attempts against the cap that applies (ATTEMPTS), which cap that is (CAP BY: handler,
job or limit), the attempts handed back, released or snoozed and not charged (UNCHARGED), when
it was created, when it may run, and its tags (comma-separated).

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
    const { values } = parseCommandArgs('jobs', args, OPTIONS);
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
        j.createdAt.toISOString(),
        j.runAt.toISOString(),
        j.tags.join(','),
      ]),
    ];
    console.log(textTable(rows));
    if (next) console.log(`(more: raise --limit, or filter with --state/--queue/--kind/--tag)`);
    return 0;
  },
};
