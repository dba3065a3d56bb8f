/**
 * A payload nested far deeper than the enqueues accept (MAX_PAYLOAD_DEPTH), written past
 * every check as the migrator could: the job list and the job's page still answer, showing the
 * payload down to the limit and "[nested too deep]" below it. Real PostgreSQL; only
 * next-auth's session is stubbed.
 */
import { sql } from 'drizzle-orm';
import { beforeAll, afterAll, describe, expect, it, vi } from 'vitest';
import { registerKinds } from '../../db/queue/index.ts';
import { run } from '../../db/queue/executor.ts';
import { MAX_PAYLOAD_DEPTH } from '../../db/schema.ts';
import { addJob, uniqueQueue, writeDeepPayload } from '../../test/factories.ts';
import { useTestDatabase } from '../../test/db.ts';
import { dalSession } from '../../test/dal-session.ts';
import { TOO_DEEP } from '../redaction.ts';
import * as dal from './index.ts';

vi.mock('next-auth', () => ({ getServerSession: vi.fn<() => Promise<unknown>>() }));

const t = useTestDatabase();
const session = dalSession(t, 'deep-payload.example.com');
const { signIn } = session;

beforeAll(async () => {
  await session.start();
  await registerKinds(t.db, [
    {
      kind: 'deep.registered',
      version: 1,
      defaultQueue: 'default',
      displayName: 'Deep',
      redactedPaths: ['deep[0].token'],
      rerunSafe: false,
    },
  ]);
});
afterAll(() => session.close());

const DEPTH = 3000;

/** A job whose payload is `{"deep": [[[…]]]}`, DEPTH arrays deep, with a failed-looking last error. */
async function deepJob(kind: string) {
  const queue = uniqueQueue('deep');
  const job = await addJob(t.db, { kind, queue, payload: { deep: [] } });
  await writeDeepPayload(t.db, job.id, DEPTH);
  await run(t.db, sql`UPDATE leasehold.jobs SET last_error = 'boom' WHERE id = ${job.id}::uuid`);
  return { queue, job };
}

/** The first value down `payload.deep[0][0]…` that is not a non-empty array, and its level (the payload is level 0). */
function innermost(payload: unknown): { level: number; value: unknown } {
  let value = (payload as { deep: unknown }).deep;
  let level = 1;
  while (Array.isArray(value) && value.length > 0) {
    value = value[0];
    level += 1;
  }
  return { level, value };
}

describe('a payload nested 3000 levels deep', () => {
  it.each(['deep.registered', 'deep.unregistered'])(
    'lists its job (%s) under every filter it matches, as every role',
    async (kind) => {
      const { queue, job } = await deepJob(kind);
      for (const role of ['viewer', 'operator', 'admin'] as const) {
        signIn(role);
        for (const filter of [{ queue }, { queue, state: 'ready' }, { queue, kind }, { queue, search: job.id }]) {
          const { jobs } = await dal.getJobs(filter);
          expect(jobs.map((j) => j.id)).toEqual([job.id]);
          expect(jobs[0]!.lastError).toBe('boom');
        }
      }
    },
  );

  it('shows its page, with the payload down to the limit and "[nested too deep]" below it', async () => {
    const { job } = await deepJob('deep.registered');
    signIn('viewer');
    const detail = (await dal.getJobDetail(job.id))!;
    expect(detail.job.id).toBe(job.id);
    expect(detail.payloadHidden).toBeNull();
    // Every level to the limit is shown as it is; the one below it is the mark.
    expect(innermost(detail.payload)).toEqual({ level: MAX_PAYLOAD_DEPTH + 1, value: TOO_DEEP });
    expect(JSON.stringify(detail.payload)).toContain('"[nested too deep]"');
  });

  it('hides the whole payload of a kind version no worker registered, and still shows the page', async () => {
    const { job } = await deepJob('deep.unregistered');
    signIn('viewer');
    const detail = (await dal.getJobDetail(job.id))!;
    expect(detail.job.id).toBe(job.id);
    expect(detail.payloadHidden).not.toBeNull();
  });
});
