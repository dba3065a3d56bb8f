/**
 * The overview's history (components/history.tsx): the e2e worker's maintenance records each
 * queue's history every second (global setup: --history-interval-ms 1000); the charts' numbers,
 * read from their text alternative, match the database; live work is charted apart from outcomes.
 */
import { sql } from 'drizzle-orm';
import { queueHistory, type HistoryRange } from '../db/queries/history.ts';
import { run } from '../db/queue/executor.ts';
import { claim, completeIfLeaseHeld, enqueueMany, failIfLeaseHeld, type ClaimedJob } from '../db/queue/index.ts';
import { db, expect, login, test, uniqueQueue } from './fixtures.ts';

/** A queue no worker serves: 5 done, 2 dead, 3 failed attempts; live: 2 ready, 1 waiting to retry. */
async function seedQueue(queue: string) {
  await enqueueMany(
    db(),
    Array.from({ length: 10 }, (_, i) => ({ queue, kind: 'test.sleep', payload: { ms: 0, i } })),
  );
  const first = await claim(db(), { queues: [queue], workerId: 'e2e-history', limit: 7, leaseSeconds: 600 });
  for (const job of first.slice(0, 4)) await completeIfLeaseHeld(db(), job);
  for (const job of first.slice(4, 6))
    await failIfLeaseHeld(db(), job, { error: 'refused', failureClass: 'permanent' });
  // One transient failure (its job waits to retry, due at once but claimed last: its claim time
  // is the newest), then one more of the ready jobs claimed and completed.
  await failIfLeaseHeld(db(), first[6]!, {
    error: 'timeout',
    failureClass: 'transient',
    policy: { baseDelayMs: 0, maxDelayMs: 0 },
  });
  let again: ClaimedJob | undefined;
  await expect
    .poll(async () => {
      [again] = await claim(db(), { queues: [queue], workerId: 'e2e-history', limit: 1, leaseSeconds: 600 });
      return again !== undefined;
    })
    .toBe(true);
  await completeIfLeaseHeld(db(), again!);
}

/** What the table of numbers says, row by row (the cells' data-key → text). */
async function tableRows(page: import('@playwright/test').Page) {
  return page
    .getByTestId('history-numbers')
    .locator('tbody tr')
    .evaluateAll((rows) =>
      rows.map((row) => ({
        at: row.getAttribute('data-at') ?? '',
        cells: Object.fromEntries(
          Array.from(row.querySelectorAll('td')).map((td) => [td.getAttribute('data-key') ?? '', td.textContent ?? '']),
        ),
      })),
    );
}

const shown = (n: number | null) => (n === null ? '—' : n.toLocaleString('en-US'));
const rate = (r: number | null) => (r === null ? '—' : `${(r * 100).toFixed(1)} %`);

test('the history charts’ numbers match the database, per range, for one queue', async ({ page }) => {
  const queue = uniqueQueue('history');
  await seedQueue(queue);
  // The worker's maintenance records the queue within a few seconds: wait for its outcomes and a sample.
  await expect
    .poll(
      async () =>
        (
          await run<{ done: number; sampled: number }>(
            db(),
            sql`SELECT coalesce(sum(done), 0)::int AS done, count(ready)::int AS sampled FROM leasehold.queue_minutes WHERE queue = ${queue}`,
          )
        )[0],
      { timeout: 20_000 },
    )
    .toMatchObject({ done: 5, sampled: expect.any(Number) });

  await login(page, 'viewer');
  await page.goto('/');
  const history = page.getByTestId('history');
  await history.getByLabel('Queue').selectOption(queue);
  const ranges: [HistoryRange, string, number][] = [
    ['1h', '1 hour', 60],
    ['24h', '24 hours', 96],
    ['7d', '7 days', 168],
    ['90d', '90 days', 90],
  ];
  await history.getByText('The numbers behind these charts').click();
  for (const [range, label, buckets] of ranges) {
    await history.getByRole('button', { name: label, exact: true }).click();
    await expect(history.getByRole('button', { name: label, exact: true })).toHaveAttribute('aria-pressed', 'true');
    await expect(page.getByTestId('history-numbers').locator('tbody tr')).toHaveCount(buckets);
    await expect(page.getByTestId('chart-history-outcomes-summary')).toContainText(
      `queue ${queue}: 5 done, 2 dead, 0 cancelled`,
    );
    const rows = await tableRows(page);
    const truth = await queueHistory(db(), range, queue);
    const byAt = new Map(truth.points.map((p) => [p.at.toISOString(), p]));
    let nonEmpty = 0;
    for (const row of rows) {
      const p = byAt.get(row.at);
      if (!p) continue; // the newest bucket may have begun between the page's read and this one
      expect(row.cells).toMatchObject({
        done: shown(p.done),
        dead: shown(p.dead),
        cancelled: shown(p.cancelled),
        failedAttempts: shown(p.failedAttempts),
        failureRate: rate(p.failureRate),
        ready: shown(p.ready),
        running: shown(p.running),
      });
      if (p.done + p.dead > 0) nonEmpty += 1;
    }
    // The seeded outcomes are in the table (one bucket, or two across a minute's edge).
    expect(nonEmpty).toBeGreaterThanOrEqual(1);
    const sum = (key: string) => rows.reduce((n, r) => n + Number((r.cells[key] ?? '0').replace(/\D/g, '') || 0), 0);
    expect({ done: sum('done'), dead: sum('dead'), failed: sum('failedAttempts') }).toEqual({
      done: 5,
      dead: 2,
      failed: 3,
    });
  }
  // Live work is charted apart from outcomes: the live chart's summary has the sampled jobs.
  await history.getByRole('button', { name: '1 hour', exact: true }).click();
  await expect(page.getByTestId('chart-history-live-summary')).toContainText(
    '2 ready, 0 scheduled, 1 retrying, 0 running, 0 lease expired',
  );
  await expect(page.getByTestId('chart-history-failure-rate-summary')).toContainText('3 failed attempts');
  await page.getByTestId('history').screenshot({ path: 'test-results/screenshots/history.png' });
});

test('a range or queue the history does not know gets a sentence, not a chart', async ({ page }) => {
  await login(page, 'viewer');
  const answer = await page.request.get('/api/history?range=2y');
  expect(answer.status()).toBe(400);
  expect((await answer.json()).message).toMatch(/range: one of 1h, 24h, 7d, 90d/);
  const queue = await page.request.get('/api/history?range=1h&queue=not%20a%20queue');
  expect(queue.status()).toBe(400);
  expect((await queue.json()).message).toMatch(/not a queue name/);
});
