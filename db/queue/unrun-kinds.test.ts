import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { deadIfKindUnrun, enqueue, registerKinds, registerWorker } from '.';
import { useTestDatabase } from '../../test/db.ts';
import { getJob, uniqueQueue } from '../../test/factories.ts';
import { backlog } from '../queries/overview.ts';
import { run } from './executor.ts';

const t = useTestDatabase();
const DAY = 86_400_000;

/** Makes a ready job look enqueued and due since `hours` ago (the rows' times, as the testing kit would). */
async function dueSince(id: string, hours: number) {
  await run(
    t.db,
    sql`UPDATE leasehold.jobs SET run_at = now() - make_interval(hours => ${hours}), claim_at = now() - make_interval(hours => ${hours}),
        created_at = now() - make_interval(hours => ${hours})
        WHERE id = ${id}::uuid`,
  );
}

const registration = (kind: string, version = 1) => ({
  kind,
  version,
  defaultQueue: 'default',
  displayName: kind,
  redactedPaths: [],
  rerunSafe: false,
});

describe('jobs of a kind no live worker runs', () => {
  it('wait, are counted on the overview, and end dead with a sentence only after the grace', async () => {
    const queue = uniqueQueue('unrun');
    await registerKinds(t.db, [registration('run.by.live')]);
    await registerWorker(t.db, {
      id: `live-${queue}`,
      host: 'h',
      pid: 1,
      queues: [queue],
      concurrency: 1,
      kinds: [{ kind: 'run.by.live', version: 1 }],
    });
    const orphan = await enqueue(t.db, { queue, kind: 'nobody.runs' });
    const groupedOrphan = await enqueue(t.db, { queue, kind: 'nobody.runs', group: 'acme' });
    const young = await enqueue(t.db, { queue, kind: 'nobody.runs' });
    const newVersion = await enqueue(t.db, { queue, kind: 'run.by.live', kindVersion: 2 });
    const served = await enqueue(t.db, { queue, kind: 'run.by.live' });
    await dueSince(orphan.id, 48);
    await dueSince(groupedOrphan.id, 48);
    await dueSince(newVersion.id, 48);
    await dueSince(served.id, 48);
    await dueSince(young.id, 1);

    // The figure: every ready job whose kind version no live worker runs (4 of the 5), grouped too.
    const before = (await backlog(t.db)).find((q) => q.queue === queue);
    expect(before).toMatchObject({ ready: 5, waitingForKind: 4 });

    const { dead } = await deadIfKindUnrun(t.db, { graceMs: DAY });
    expect(dead.sort()).toEqual([orphan.id, groupedOrphan.id, newVersion.id].sort());
    for (const id of [orphan.id, groupedOrphan.id, newVersion.id]) {
      const job = await getJob(t.db, id);
      expect(job).toMatchObject({ state: 'dead', failureClass: 'permanent', attempts: 0 });
      expect(job.lastError).toMatch(
        /^no live worker ran kind (nobody\.runs version 1|run\.by\.live version 2) for the unknown-kind grace period \(1 day\): start a worker with a handler for it, then retry the job$/,
      );
    }
    expect(await getJob(t.db, young.id)).toMatchObject({ state: 'ready' });
    expect(await getJob(t.db, served.id)).toMatchObject({ state: 'ready' });
    // Their ready rows went with them; the others' stayed.
    const rows = await run<{ id: string }>(t.db, sql`SELECT id FROM leasehold.ready_rows WHERE queue = ${queue}`);
    expect(rows.map((r) => r.id).sort()).toEqual([young.id, served.id].sort());
    expect((await backlog(t.db)).find((q) => q.queue === queue)).toMatchObject({
      ready: 2,
      dead: 3,
      waitingForKind: 1,
    });
  });

  it('counts the grace from when a live worker last ran the kind, not from when the job became due', async () => {
    const queue = uniqueQueue('unrun-left');
    const workerId = `gone-${queue}`;
    await registerKinds(t.db, [registration('was.run')]);
    await registerWorker(t.db, {
      id: workerId,
      host: 'h',
      pid: 1,
      queues: [queue],
      concurrency: 1,
      kinds: [{ kind: 'was.run', version: 1 }],
    });
    const job = await enqueue(t.db, { queue, kind: 'was.run' });
    await dueSince(job.id, 48);
    // A round while the worker is live records it as last seen now …
    expect((await deadIfKindUnrun(t.db, { graceMs: DAY })).dead).toEqual([]);
    // … so once it is gone, the job waits the grace from then on.
    await run(t.db, sql`DELETE FROM leasehold.workers WHERE id = ${workerId}`);
    expect((await backlog(t.db)).find((q) => q.queue === queue)).toMatchObject({ waitingForKind: 1 });
    expect((await deadIfKindUnrun(t.db, { graceMs: DAY })).dead).toEqual([]);
    expect(await getJob(t.db, job.id)).toMatchObject({ state: 'ready' });
    await run(
      t.db,
      sql`UPDATE leasehold.kinds SET live_at = now() - interval '25 hours', last_seen_at = now() - interval '25 hours' WHERE kind = 'was.run'`,
    );
    expect((await deadIfKindUnrun(t.db, { graceMs: DAY })).dead).toEqual([job.id]);
  });

  it('gives a job enqueued just now with a back-dated run_at the whole grace, counted from its enqueue', async () => {
    const queue = uniqueQueue('unrun-backdated');
    const job = await enqueue(t.db, { queue, kind: 'not.yet.deployed', runAt: new Date(Date.now() - 2 * DAY) });
    expect(await getJob(t.db, job.id)).toMatchObject({ state: 'ready' });
    expect((await deadIfKindUnrun(t.db, { graceMs: DAY })).dead).toEqual([]);
    expect(await getJob(t.db, job.id)).toMatchObject({ state: 'ready', lastError: null });
    // Enqueued a little over a grace ago (run_at stays two days back): now it ends dead.
    await run(t.db, sql`UPDATE leasehold.jobs SET created_at = now() - interval '25 hours' WHERE id = ${job.id}::uuid`);
    expect((await deadIfKindUnrun(t.db, { graceMs: DAY })).dead).toEqual([job.id]);
  });

  it('a worker records exactly the kind versions it runs, and they go with its entry', async () => {
    const id = `w-${uniqueQueue()}`;
    const kindsOf = async () =>
      run<{ kind: string; version: number }>(
        t.db,
        sql`SELECT kind, version FROM leasehold.worker_kinds WHERE worker_id = ${id} ORDER BY kind, version`,
      );
    const info = { id, host: 'h', pid: 1, queues: ['q'], concurrency: 1 };
    await registerWorker(t.db, {
      ...info,
      kinds: [
        { kind: 'a', version: 1 },
        { kind: 'a', version: 2 },
      ],
    });
    expect(await kindsOf()).toEqual([
      { kind: 'a', version: 1 },
      { kind: 'a', version: 2 },
    ]);
    await registerWorker(t.db, {
      ...info,
      kinds: [
        { kind: 'a', version: 2 },
        { kind: 'b', version: 1 },
      ],
    });
    expect(await kindsOf()).toEqual([
      { kind: 'a', version: 2 },
      { kind: 'b', version: 1 },
    ]);
    await run(t.db, sql`DELETE FROM leasehold.workers WHERE id = ${id}`);
    expect(await kindsOf()).toEqual([]);
  });

  it('refuses a bad grace with a sentence naming it, and changes nothing', async () => {
    await expect(deadIfKindUnrun(t.db, { graceMs: -1 })).rejects.toThrow(/deadIfKindUnrun.*graceMs/);
  });
});
