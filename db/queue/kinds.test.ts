import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { LeaseholdInputError, registerKinds, setRedactedPaths, type KindRegistration } from '.';
import { listKinds, redactedPathsOf } from '../queries/kinds.ts';
import { useTestDatabase, watchedExecutor } from '../../test/db.ts';
import { uniqueQueue } from '../../test/factories.ts';
import { run } from './executor.ts';

const t = useTestDatabase();

function kind(name: string, overrides: Partial<KindRegistration> = {}): KindRegistration {
  return {
    kind: name,
    version: 1,
    defaultQueue: 'default',
    displayName: name,
    redactedPaths: [],
    rerunSafe: false,
    ...overrides,
  };
}

const rowOf = async (name: string, version = 1) =>
  (await listKinds(t.db)).find((k) => k.kind === name && k.version === version);

const auditRow = async (id: number) =>
  (
    await run(
      t.db,
      sql`SELECT actor, action, job_ids, queue, requested, affected, outcome, detail FROM leasehold.audit_log WHERE id = ${id}`,
    )
  )[0];

/** A pg executor over the test pool that counts the statements it is given. */
function countingExecutor() {
  const counted = { statements: 0 };
  const executor = watchedExecutor(t.pool, (_statement, execute) => {
    counted.statements += 1;
    return execute();
  });
  return { executor, counted };
}

describe('registerKinds', () => {
  it('records every kind version in one statement, with its description and sorted paths', async () => {
    const name = uniqueQueue('kind');
    const { executor, counted } = countingExecutor();
    await registerKinds(executor, [
      kind(name, {
        version: 1,
        redactedPaths: ['email', 'card.number', 'email'],
        displayName: 'Mail',
        rerunSafe: true,
      }),
      kind(name, { version: 2, redactedPaths: ['to[].email'], defaultQueue: 'mail' }),
    ]);
    expect(counted.statements).toBe(1);
    expect(await rowOf(name, 1)).toMatchObject({
      displayName: 'Mail',
      defaultQueue: 'default',
      redactedPaths: ['card.number', 'email'],
      rerunSafe: true,
    });
    expect(await rowOf(name, 2)).toMatchObject({
      defaultQueue: 'mail',
      redactedPaths: ['to[].email'],
      rerunSafe: false,
    });
  });

  it('keeps the paths a kind version has when a worker declares fewer, and adds the ones it declares more', async () => {
    const name = uniqueQueue('kind');
    await registerKinds(t.db, [kind(name, { redactedPaths: ['email', 'phone'] })]);
    await registerKinds(t.db, [kind(name, { redactedPaths: ['email'], displayName: 'older worker' })]);
    expect(await rowOf(name)).toMatchObject({ redactedPaths: ['email', 'phone'], displayName: 'older worker' });
    await registerKinds(t.db, [kind(name, { redactedPaths: ['address.street'] })]);
    expect(await redactedPathsOf(t.db, name, 1)).toEqual(['address.street', 'email', 'phone']);
  });

  it('moves last_seen_at on a known kind version and keeps first_seen_at', async () => {
    const name = uniqueQueue('kind');
    await registerKinds(t.db, [kind(name)]);
    await run(
      t.db,
      sql`UPDATE leasehold.kinds SET first_seen_at = now() - interval '1 day', last_seen_at = now() - interval '1 day' WHERE kind = ${name}`,
    );
    const before = (await rowOf(name))!;
    await registerKinds(t.db, [kind(name)]);
    const after = (await rowOf(name))!;
    expect(after.firstSeenAt).toEqual(before.firstSeenAt);
    expect(after.lastSeenAt.getTime()).toBeGreaterThan(before.lastSeenAt.getTime());
  });

  it('does not deadlock when workers register the same kinds together in different orders', async () => {
    const names = Array.from({ length: 20 }, () => uniqueQueue('kind'));
    await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        registerKinds(
          t.db,
          (i % 2 ? [...names].reverse() : names).map((name) => kind(name, { redactedPaths: [`field${i}`] })),
        ),
      ),
    );
    for (const name of names) {
      expect(await redactedPathsOf(t.db, name, 1)).toEqual(Array.from({ length: 8 }, (_, i) => `field${i}`).sort());
    }
  });

  it('refuses a bad path or a repeated kind version before writing anything', async () => {
    const name = uniqueQueue('kind');
    await expect(registerKinds(t.db, [kind(name, { redactedPaths: ['a..b'] })])).rejects.toThrow(LeaseholdInputError);
    await expect(registerKinds(t.db, [kind(name), kind(name)])).rejects.toThrow(/a kind version repeats/);
    expect(await rowOf(name)).toBeUndefined();
  });
});

describe('setRedactedPaths', () => {
  it('shrinks a kind version’s paths and audits the change in the same statement', async () => {
    const name = uniqueQueue('kind');
    await registerKinds(t.db, [kind(name, { redactedPaths: ['email', 'phone'] })]);
    const { executor, counted } = countingExecutor();
    const outcome = await setRedactedPaths(executor, {
      kind: name,
      version: 1,
      paths: ['email'],
      actor: 'admin@example.com',
      reason: 'phone is not personal here',
    });
    expect(counted.statements).toBe(1);
    expect(outcome).toMatchObject({ applied: true, before: ['email', 'phone'], after: ['email'] });
    expect(await redactedPathsOf(t.db, name, 1)).toEqual(['email']);
    expect(await auditRow(outcome.auditId)).toMatchObject({
      actor: 'admin@example.com',
      action: 'set_redacted_paths',
      requested: 1,
      affected: 1,
      outcome: 'applied',
      detail: {
        kind: name,
        version: 1,
        before: ['email', 'phone'],
        after: ['email'],
        reason: 'phone is not personal here',
      },
    });
  });

  it('refuses a kind version no worker registered, audits the refusal, and creates no entry', async () => {
    const name = uniqueQueue('kind');
    const outcome = await setRedactedPaths(t.db, { kind: name, version: 3, paths: [], actor: 'admin@example.com' });
    expect(outcome).toMatchObject({ applied: false, reason: 'not_found' });
    expect(await auditRow(outcome.auditId)).toMatchObject({
      action: 'set_redacted_paths',
      affected: 0,
      outcome: 'refused',
      detail: { kind: name, version: 3, before: null, after: null },
    });
    expect(await redactedPathsOf(t.db, name, 3)).toBeNull();
  });

  it('leaves a shrunk path removed until a worker that declares it registers again', async () => {
    const name = uniqueQueue('kind');
    await registerKinds(t.db, [kind(name, { redactedPaths: ['email', 'phone'] })]);
    await setRedactedPaths(t.db, { kind: name, version: 1, paths: [], actor: 'admin@example.com' });
    await registerKinds(t.db, [kind(name, { redactedPaths: ['email'] })]);
    expect(await redactedPathsOf(t.db, name, 1)).toEqual(['email']);
  });
});
