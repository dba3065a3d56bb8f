/**
 * The job detail's failed attempts: each carries its stack and cause chain, and no role sees a
 * redacted payload value in any error text, even one stored unscrubbed (a path added after the
 * attempt, a client that does not scrub). Real PostgreSQL; only next-auth's session is stubbed.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { addJob, claimOne, uniqueQueue } from '../../test/factories.ts';
import { useTestDatabase } from '../../test/db.ts';
import { dalSession } from '../../test/dal-session.ts';
import { failIfLeaseHeld, registerKinds } from '../../db/queue/index.ts';
import type { ErrorDetail } from '../../db/queue/error-detail.ts';
import { ROLES } from '../../db/schema.ts';
import { errorDetailText } from '../present.ts';
import { MASK } from '../redaction.ts';
import * as dal from './index.ts';

vi.mock('next-auth', () => ({ getServerSession: vi.fn<() => Promise<unknown>>() }));

const t = useTestDatabase();
const session = dalSession(t, 'job-detail.example.com');
const { signIn } = session;

beforeAll(async () => {
  await session.start();
  await registerKinds(t.db, [
    {
      kind: 'detail.mail',
      version: 1,
      defaultQueue: 'default',
      displayName: 'Mail',
      redactedPaths: ['to[].email'],
      rerunSafe: false,
    },
  ]);
});
afterAll(() => session.close());

const EMAIL = 'bob.viewer@example.com';
const TOKEN = 'tok_9d8c7b6a5f';

/** As a client that does not scrub would store it: the secrets in the message, a cause and a stack. */
const unscrubbed: ErrorDetail = {
  stack: `    at send (/srv/mail/${EMAIL}/send.js:1:1)`,
  causes: [
    { name: 'HttpError', message: `422 for ${EMAIL}`, code: 'E422', stack: `    at auth (/srv/${TOKEN}.js:2:2)` },
    { name: 'Error', message: 'socket hang up', stack: null },
  ],
  chainEnd: 'cycle',
  truncated: false,
};

async function failedJob(kind: string) {
  const queue = uniqueQueue('job-detail');
  const job = await addJob(t.db, {
    kind,
    queue,
    payload: { to: [{ email: EMAIL }], token: TOKEN, subject: 'Welcome' },
  });
  const lease = await claimOne(t.db, queue);
  await failIfLeaseHeld(t.db, lease, {
    error: `PermanentError: provider refused ${EMAIL}`,
    failureClass: 'permanent',
    detail: unscrubbed,
  });
  return job;
}

describe('the job detail of a failed attempt', () => {
  it.each(ROLES)('shows %s its stack and cause chain, with every redacted value masked', async (role) => {
    const job = await failedJob('detail.mail');
    signIn(role);
    const detail = (await dal.getJobDetail(job.id))!;
    const text = JSON.stringify(detail);
    expect(text).not.toContain(EMAIL);
    expect(text).not.toContain(TOKEN);
    const [attempt] = detail.attempts;
    expect(attempt).toMatchObject({ outcome: 'failed', error: `PermanentError: provider refused ${MASK}` });
    expect(detail.job.lastError).toBe(`PermanentError: provider refused ${MASK}`);
    expect(attempt!.errorDetail).toEqual({
      stack: `    at send (/srv/mail/${MASK}/send.js:1:1)`,
      causes: [
        { name: 'HttpError', message: `422 for ${MASK}`, code: 'E422', stack: `    at auth (/srv/${MASK}.js:2:2)` },
        { name: 'Error', message: 'socket hang up', stack: null },
      ],
      chainEnd: 'cycle',
      truncated: false,
    });
    // What the page prints for it.
    expect(errorDetailText(attempt!.errorDetail!)).toBe(
      [
        `    at send (/srv/mail/${MASK}/send.js:1:1)`,
        `Caused by: HttpError: 422 for ${MASK} (code E422)`,
        `    at auth (/srv/${MASK}.js:2:2)`,
        'Caused by: Error: socket hang up',
        '… the next cause is one shown above (the chain loops).',
      ].join('\n'),
    );
  });

  it('masks every payload value in error text when the kind version is not registered', async () => {
    const job = await failedJob('detail.unregistered');
    signIn('viewer');
    const detail = (await dal.getJobDetail(job.id))!;
    expect(detail.payloadHidden).not.toBeNull();
    const text = JSON.stringify(detail.attempts);
    expect(text).not.toContain(EMAIL);
    expect(text).not.toContain(TOKEN);
    expect(detail.attempts[0]!.errorDetail!.causes[1]!.message).toBe('socket hang up');
  });

  it('has no detail for an attempt that failed without one', async () => {
    const queue = uniqueQueue('job-detail-plain');
    const job = await addJob(t.db, { kind: 'detail.mail', queue, payload: { to: [] } });
    await failIfLeaseHeld(t.db, await claimOne(t.db, queue), { error: 'plain', failureClass: 'permanent' });
    signIn('viewer');
    expect((await dal.getJobDetail(job.id))!.attempts).toMatchObject([{ error: 'plain', errorDetail: null }]);
  });
});
