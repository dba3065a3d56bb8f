/**
 * A worker records the kinds it runs in the kinds registry when it starts, and a rolling deploy
 * cannot unmask a payload field: a worker declaring fewer redacted paths keeps the stored ones.
 */
import { workerSettings } from '../test/workers.ts';
import { z } from 'zod';
import { afterEach, describe, expect, it } from 'vitest';
import { listWorkers } from '../db/queue/index.ts';
import { listKinds } from '../db/queries/kinds.ts';
import { silentLogger } from '../test/attempts.ts';
import { useTestDatabase } from '../test/db.ts';
import { uniqueQueue } from '../test/factories.ts';
import { defineHandler, HandlerRegistry, type Handler } from './handler.ts';
import { Worker, type WorkerSettings } from './worker.ts';

const t = useTestDatabase();
const workers: Worker[] = [];
afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.stop(0)));
});

function settings(queue: string): WorkerSettings {
  return workerSettings(queue, `kinds-${queue}-${workers.length}`);
}

async function startWorker(queue: string, handlers: Handler[]): Promise<Worker> {
  const worker = new Worker(settings(queue), {
    db: t.db,
    databaseUrl: t.url,
    registry: new HandlerRegistry(handlers),
    logger: silentLogger,
  });
  workers.push(worker);
  await worker.start();
  return worker;
}

function mailer(kind: string, redact: string[], extra: Partial<Handler> = {}): Handler {
  return defineHandler({
    kind,
    versions: [1, 2],
    schema: z.object({}).passthrough(),
    timeoutMs: 1000,
    displayName: 'Invoice mail',
    defaultQueue: 'mail',
    redact,
    rerunSafe: true,
    handle: async () => 'sent',
    ...extra,
  });
}

const kindsOf = async (kind: string) => (await listKinds(t.db)).filter((k) => k.kind === kind);

describe("a worker's start", () => {
  it('records each kind version it runs: display name, default queue, redacted paths, re-run safety', async () => {
    const queue = uniqueQueue('kinds');
    const kind = uniqueQueue('invoice.mail');
    const plain = uniqueQueue('plain');
    const worker = await startWorker(queue, [
      mailer(kind, ['email', 'address.street']),
      defineHandler({ kind: plain, versions: [1], schema: z.unknown(), timeoutMs: 1000, handle: async () => null }),
    ]);
    expect(await kindsOf(kind)).toMatchObject([
      {
        version: 1,
        displayName: 'Invoice mail',
        defaultQueue: 'mail',
        redactedPaths: ['address.street', 'email'],
        rerunSafe: true,
      },
      { version: 2, redactedPaths: ['address.street', 'email'] },
    ]);
    // A handler that declares nothing: its kind as its name, the default queue, nothing masked.
    expect(await kindsOf(plain)).toMatchObject([
      { version: 1, displayName: plain, defaultQueue: 'default', redactedPaths: [], rerunSafe: false },
    ]);
    // Recorded by the time the worker is listed as live.
    expect((await listWorkers(t.db, 60)).map((w) => w.id)).toContain(worker.health().workerId);
  });

  it('keeps the paths a newer worker recorded when an older one with fewer paths starts', async () => {
    const kind = uniqueQueue('invoice.mail');
    await startWorker(uniqueQueue('kinds'), [mailer(kind, ['email', 'phone'])]);
    await startWorker(uniqueQueue('kinds'), [mailer(kind, ['email'], { displayName: 'Invoice mail (old)' })]);
    expect(await kindsOf(kind)).toMatchObject([
      { version: 1, redactedPaths: ['email', 'phone'], displayName: 'Invoice mail (old)' },
      { version: 2, redactedPaths: ['email', 'phone'] },
    ]);
  });

  it('adds the paths a worker declares beyond the recorded ones', async () => {
    const kind = uniqueQueue('invoice.mail');
    await startWorker(uniqueQueue('kinds'), [mailer(kind, ['email'])]);
    await startWorker(uniqueQueue('kinds'), [mailer(kind, ['email', 'card.number'])]);
    expect((await kindsOf(kind)).map((k) => k.redactedPaths)).toEqual([
      ['card.number', 'email'],
      ['card.number', 'email'],
    ]);
  });
});

describe('the handler registry', () => {
  it('refuses a handler with a redacted path the dashboard could not match, when the handlers load', () => {
    expect(() => new HandlerRegistry([mailer('bad.paths', ['email', 'a..b'])])).toThrow(/redactedPaths/);
  });

  it('refuses a searchable path the index could not spell (an array, a bad key, too many), when the handlers load', () => {
    for (const searchable of [
      ['items[].sku'],
      ['customer..email'],
      ['1st'],
      Array.from({ length: 21 }, (_, i) => `p${i}`),
    ]) {
      expect(() => new HandlerRegistry([mailer('bad.search', [], { searchable })]), searchable[0]).toThrow(
        /searchablePaths/,
      );
    }
  });
});

describe('searchable paths', () => {
  it("records the worker's declaration per kind version, the last starting worker's winning", async () => {
    const kind = uniqueQueue('invoice.mail');
    await startWorker(uniqueQueue('kinds'), [mailer(kind, [], { searchable: ['orderId', 'customer.email'] })]);
    expect((await kindsOf(kind)).map((k) => k.searchPaths.map((p) => [p.path, p.added, p.index]))).toEqual([
      [
        ['customer.email', false, 'missing'],
        ['orderId', false, 'missing'],
      ],
      [
        ['customer.email', false, 'missing'],
        ['orderId', false, 'missing'],
      ],
    ]);
    await startWorker(uniqueQueue('kinds'), [mailer(kind, [], { searchable: ['orderId'] })]);
    expect((await kindsOf(kind)).map((k) => k.searchPaths.map((p) => p.path))).toEqual([['orderId'], ['orderId']]);
  });
});
