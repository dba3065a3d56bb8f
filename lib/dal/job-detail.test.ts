/**
 * The job detail's failed attempts: each carries its stack and cause chain, and no role sees a
 * redacted payload value in any error text, even one stored unscrubbed (a path added after the
 * attempt, a client that does not scrub). A completed job's result is masked as its payload is,
 * and its progress message scrubbed; only the admin's audited reveal returns the result whole.
 * Real PostgreSQL; only next-auth's session is stubbed.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { addJob, claimOne, uniqueQueue } from '../../test/factories.ts';
import { useTestDatabase } from '../../test/db.ts';
import { dalSession } from '../../test/dal-session.ts';
import { completeManyIfLeaseHeld, failIfLeaseHeld, registerKinds, storableResult } from '../../db/queue/index.ts';
import { writeProgress } from '../../db/queue/results.ts';
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

/** A job of `kind` completed with `value` as its result, after a progress report quoting its payload. */
async function completedJob(kind: string, value: unknown) {
  const queue = uniqueQueue('job-detail-result');
  const job = await addJob(t.db, {
    kind,
    queue,
    payload: { to: [{ email: EMAIL }], token: TOKEN, subject: 'Welcome' },
  });
  const lease = await claimOne(t.db, queue);
  await writeProgress(t.db, lease, 1, `sent to ${EMAIL}`);
  const [outcome] = await completeManyIfLeaseHeld(t.db, [{ ...lease, result: storableResult(value) }]);
  expect(outcome).toMatchObject({ applied: true });
  return job;
}

describe("the job detail's result and progress", () => {
  // A result that quotes the payload: at a registered path, under a well-known key, and in text.
  const returned = {
    to: [{ email: EMAIL, status: 'sent' }],
    sessionToken: 'tok_result_only',
    note: `delivered to ${EMAIL}`,
    [EMAIL]: 'keyed by the address',
    byAddress: { [EMAIL]: { token: 'tok_by_address' } },
    count: 1,
  };

  it.each(ROLES)('shows %s the result masked as the payload is, and the progress scrubbed', async (role) => {
    const job = await completedJob('detail.mail', returned);
    signIn(role);
    const detail = (await dal.getJobDetail(job.id))!;
    const text = JSON.stringify(detail);
    for (const secret of [EMAIL, TOKEN, 'tok_result_only', 'tok_by_address']) expect(text).not.toContain(secret);
    expect(detail.result).toMatchObject({
      attempt: 1,
      marker: null,
      hidden: null,
      value: {
        to: [{ email: MASK, status: 'sent' }],
        sessionToken: MASK,
        note: `delivered to ${MASK}`,
        [MASK]: 'keyed by the address',
        byAddress: { [MASK]: { token: MASK } },
        count: 1,
      },
    });
    // A masked path names its keys: one made of a payload value is scrubbed there too.
    // In jsonb's order of keys: shorter first.
    expect(detail.result!.redactedPaths).toEqual(['to[0].email', `byAddress.${MASK}.token`, 'sessionToken']);
    expect(detail.live).toMatchObject({
      state: 'done',
      subState: 'done',
      progress: { attempt: 1, fraction: 1, percent: 100, message: `sent to ${MASK}` },
    });
    // An admin may reveal it (the payload's reveal returns it too); nobody else sees the button.
    expect(detail.can.reveal).toBe(role === 'admin');
  });

  it("returns the result whole only in the admin's audited reveal", async () => {
    const job = await completedJob('detail.mail', returned);
    signIn('admin');
    expect(await dal.revealPayload(job.id)).toEqual({
      payload: { to: [{ email: EMAIL }], token: TOKEN, subject: 'Welcome' },
      result: returned,
    });
  });

  it('hides the result whole when the kind version is not registered, as the payload is', async () => {
    const job = await completedJob('detail.unregistered', { plain: 'nothing secret here' });
    signIn('viewer');
    const detail = (await dal.getJobDetail(job.id))!;
    expect(detail.result).toMatchObject({ value: MASK, redactedPaths: [], hidden: expect.stringContaining('hidden') });
    expect(JSON.stringify(detail)).not.toContain('nothing secret here');
    expect(detail.live.progress?.message).toBe(`sent to ${MASK}`);
  });

  it('shows the marker of a result that was not kept, scrubbed; and no result where there is none', async () => {
    const queue = uniqueQueue('job-detail-marker');
    const job = await addJob(t.db, { kind: 'detail.mail', queue, payload: { to: [{ email: EMAIL }] } });
    const lease = await claimOne(t.db, queue);
    const marker = { json: null, marker: `not stored: over the cap for ${EMAIL}`, bytes: 70_000 };
    await completeManyIfLeaseHeld(t.db, [{ ...lease, result: marker }]);
    signIn('viewer');
    const detail = (await dal.getJobDetail(job.id))!;
    expect(detail.result).toMatchObject({ value: null, marker: `not stored: over the cap for ${MASK}`, bytes: 70_000 });

    const plain = await addJob(t.db, { kind: 'detail.mail', queue: uniqueQueue('job-detail-none'), payload: {} });
    const none = (await dal.getJobDetail(plain.id))!;
    expect(none.result).toBeNull();
    expect(none.noResult).toBe('No result yet: the job has not completed.');
    expect(none.live).toMatchObject({ state: 'ready', progress: null });
  });

  it('answers the live poll with the state and the progress, scrubbed, and refuses a missing job', async () => {
    const queue = uniqueQueue('job-detail-live');
    const job = await addJob(t.db, { kind: 'detail.mail', queue, payload: { to: [{ email: EMAIL }] } });
    const lease = await claimOne(t.db, queue);
    await writeProgress(t.db, lease, 0.25, `a quarter of ${EMAIL}'s mail <b>bold</b>`);
    signIn('viewer');
    expect(await dal.getJobProgress(job.id)).toMatchObject({
      state: 'running',
      attempts: 1,
      progress: { attempt: 1, fraction: 0.25, percent: 25, message: `a quarter of ${MASK}'s mail <b>bold</b>` },
    });
    await expect(dal.getJobProgress('00000000-0000-7000-8000-000000000001')).rejects.toThrow(
      'No job with this id exists any more.',
    );
    await expect(dal.getJobProgress('not-a-uuid')).rejects.toThrow('job id');
  });
});
