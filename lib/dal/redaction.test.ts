/**
 * Redaction beyond the payload: a job whose payload holds secrets at redacted places (a declared
 * nested path, a secret key the default list matches only by pattern) and whose error, stack,
 * idempotency key, trace id, tags and audit reason echo them. No surface of the data layer
 * shows them to any role (the jobs list, the job page, the retry plan, the failure groups, the
 * audit log, the overview), an exact key search or a tag filter answers a viewer or operator as
 * for a missing key or tag, and the admin's audited reveal still returns them (so they were
 * really there).
 * Real PostgreSQL; only next-auth's session is stubbed.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { failIfLeaseHeld, registerKinds } from '../../db/queue/index.ts';
import type { ErrorDetail } from '../../db/queue/error-detail.ts';
import { useTestDatabase } from '../../test/db.ts';
import { dalSession } from '../../test/dal-session.ts';
import { addJob, claimOne, uniqueQueue } from '../../test/factories.ts';
import { MASK } from '../redaction.ts';
import * as dal from './index.ts';

vi.mock('next-auth', () => ({ getServerSession: vi.fn<() => Promise<unknown>>() }));

const t = useTestDatabase();
const session = dalSession(t, 'redaction.example.com');
const { signIn } = session;

const KIND = 'redaction.receipt';
const EMAIL = 'canary.ada@example.com';
const TOKEN = 'tok_canary_5e1f0c';
const CARD = '4000056655665556';
const CANARIES = [EMAIL, TOKEN, CARD];

beforeAll(async () => {
  await session.start();
  // The worker declares only the nested email; the token and the card are caught by the
  // default list's pattern (`accessToken`, `cardNumber` are not on it by those names).
  await registerKinds(t.db, [
    {
      kind: KIND,
      version: 1,
      defaultQueue: 'default',
      displayName: 'Receipt',
      redactedPaths: ['customer.email'],
      rerunSafe: false,
    },
  ]);
});
afterAll(() => session.close());

const payload = () => ({
  orderId: crypto.randomUUID(),
  customer: { email: EMAIL, name: 'Ada' },
  accessToken: TOKEN,
  billing: { cardNumber: CARD },
});

/** As a client that does not scrub would store it: the secrets in the message, a cause and a stack. */
const leaky: ErrorDetail = {
  stack: `    at send (/srv/${EMAIL}/send.js:1:1)`,
  causes: [
    { name: 'HttpError', message: `422 ${JSON.stringify(payload())}`, stack: `    at auth (/srv/${TOKEN}.js:2:2)` },
  ],
  truncated: false,
};

/** A dead job of KIND whose error, key and trace id quote its payload's secrets. */
async function leakyDeadJob(queue: string) {
  const data = payload();
  // Keys are unique (a repeated one would return the first job): the order id, not secret, tells them apart.
  const key = `welcome:${EMAIL}:${data.orderId}`;
  const job = await addJob(t.db, {
    kind: KIND,
    queue,
    payload: data,
    idempotencyKey: key,
    traceId: `trace-${TOKEN}`,
    maxAttempts: 1,
  });
  await failIfLeaseHeld(t.db, await claimOne(t.db, queue), {
    // The queue's name (digits aside) keeps each test's jobs in a failure group of their own.
    error: `PermanentError: provider refused ${EMAIL} with card ${CARD}: {"accessToken":"${TOKEN}"} (${queue})`,
    failureClass: 'permanent',
    detail: leaky,
  });
  return { ...job, key };
}

function expectClean(what: unknown) {
  const text = JSON.stringify(what);
  for (const c of CANARIES) expect(text).not.toContain(c);
}

describe.each(['viewer', 'operator'] as const)('as %s', (role) => {
  it('no page shows a redacted value: list, job, retry plan, failure groups, audit, overview', async () => {
    const queue = uniqueQueue(`redaction-${role}`);
    const dead = await leakyDeadJob(queue);
    // An operator's retry whose reason quotes the customer's email: audited with that reason.
    const retried = await leakyDeadJob(queue);
    signIn('operator');
    expect(await dal.retryJob({ id: retried.id, reason: `customer ${EMAIL} asked` })).toMatchObject({ ok: true });

    signIn(role);
    const list = await dal.getJobs({ queue });
    expect(list.jobs.map((j) => j.id).sort()).toEqual([dead.id, retried.id].sort());
    expectClean(list);
    expect(list.jobs.find((j) => j.id === dead.id)).toMatchObject({
      lastError: `PermanentError: provider refused ${MASK} with card ${MASK}: {"accessToken":"${MASK}"} (${queue})`,
      idempotencyKey: dead.key.replace(EMAIL, MASK),
      traceId: `trace-${MASK}`,
    });

    for (const id of [dead.id, retried.id]) {
      const detail = await dal.getJobDetail(id);
      expect(detail?.attempts).toHaveLength(1);
      expectClean(detail);
      // The job page's poll: its attempts, last error and result as the page shows them.
      const live = await dal.getJobProgress(id);
      expect(live.attemptRows).toHaveLength(1);
      expectClean(live);
    }
    const detail = (await dal.getJobDetail(retried.id))!;
    expect(detail.audit).toMatchObject([{ action: 'retry', reason: `customer ${MASK} asked` }]);
    expect(detail.retryPlan).toContain(`delivery key welcome:${MASK}:`);

    const groups = await dal.getFailureGroups();
    const group = groups.groups.find((g) => g.queue === queue);
    expect(group?.example).toContain(`provider refused ${MASK}`);
    expectClean(groups);

    const audit = await dal.getAudit({ action: 'retry' });
    expect(audit.entries.find((e) => e.jobIds.includes(retried.id))).toMatchObject({
      reason: `customer ${MASK} asked`,
    });
    expectClean(audit);
    expectClean(await dal.getOverview());
  });

  it('an exact key search answers a redacted key as it answers a missing one', async () => {
    const queue = uniqueQueue(`redaction-search-${role}`);
    const job = await leakyDeadJob(queue);
    const plain = await addJob(t.db, { kind: KIND, queue, payload: payload(), idempotencyKey: `plain-${queue}` });
    signIn(role);
    expect((await dal.getJobs({ search: job.key })).jobs.map((j) => j.id)).not.toContain(job.id);
    expect(await dal.getJobs({ search: job.key })).toEqual(await dal.getJobs({ search: 'welcome:nobody@example.com' }));
    // A key that quotes nothing secret is still found, and a job id too.
    expect((await dal.getJobs({ search: `plain-${queue}` })).jobs.map((j) => j.id)).toEqual([plain.id]);
    expect((await dal.getJobs({ search: job.id })).jobs.map((j) => j.id)).toEqual([job.id]);
  });

  it('shows a tag that quotes a masked value scrubbed, and a filter by it answers as a missing tag', async () => {
    const queue = uniqueQueue(`redaction-tags-${role}`);
    const quoting = `to:${EMAIL}`;
    const before = await addJob(t.db, { kind: KIND, queue, payload: payload() });
    const job = await addJob(t.db, { kind: KIND, queue, payload: payload(), tags: [`plain-${queue}`, quoting] });
    signIn(role);
    const list = await dal.getJobs({ tag: `plain-${queue}` });
    expect(list.jobs.map((j) => [j.id, j.tags])).toEqual([[job.id, [`plain-${queue}`, `to:${MASK}`]]]);
    expectClean(list);
    expect((await dal.getJobDetail(job.id))?.job.tags).toEqual([`plain-${queue}`, `to:${MASK}`]);
    expect(await dal.getJobs({ tag: quoting })).toEqual(await dal.getJobs({ tag: 'to:nobody@example.com' }));
    expect((await dal.getJobs({ tag: quoting })).jobs).toEqual([]);
    // The list's "n new jobs" count leaves it out as the list does; a tag quoting nothing counts it.
    expect(await dal.getNewJobCount({ queue, tag: quoting, newerThan: before.id })).toEqual({ count: 0, more: false });
    expect(await dal.getNewJobCount({ queue, tag: `plain-${queue}`, newerThan: before.id })).toEqual({
      count: 1,
      more: false,
    });
  });
});

describe('as admin', () => {
  it('sees error text scrubbed too, finds the job by its key, and gets the secrets only from the audited reveal', async () => {
    const queue = uniqueQueue('redaction-admin');
    const job = await leakyDeadJob(queue);
    signIn('admin');
    expectClean(await dal.getJobDetail(job.id));
    expect((await dal.getJobs({ search: job.key })).jobs.map((j) => j.id)).toEqual([job.id]);
    // By a tag quoting a masked value too (shown scrubbed all the same).
    const tagged = await addJob(t.db, { kind: KIND, queue, payload: payload(), tags: [`to:${EMAIL}:${queue}`] });
    expect((await dal.getJobs({ tag: `to:${EMAIL}:${queue}` })).jobs.map((j) => [j.id, j.tags])).toEqual([
      [tagged.id, [`to:${MASK}:${queue}`]],
    ]);
    expect(await dal.getNewJobCount({ tag: `to:${EMAIL}:${queue}`, newerThan: job.id })).toEqual({
      count: 1,
      more: false,
    });
    const revealed = JSON.stringify(await dal.revealPayload(job.id));
    for (const c of CANARIES) expect(revealed).toContain(c);
  });

  it('previews a failure group by the key the page shows, which does not quote the error', async () => {
    const queue = uniqueQueue('redaction-group');
    const job = await leakyDeadJob(queue);
    signIn('admin');
    const group = (await dal.getFailureGroups()).groups.find((g) => g.queue === queue)!;
    expect(group.fingerprint).toMatch(/^[0-9a-f]{32}$/);
    const preview = await dal.previewFailureGroup({ failureClass: group.failureClass, fingerprint: group.fingerprint });
    expect(preview.jobs.map((j) => j.id)).toContain(job.id);
  });
});
