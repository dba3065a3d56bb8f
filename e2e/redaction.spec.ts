/**
 * The redaction canary, end to end: the real e2e worker runs `test.leak` (test/handlers.ts),
 * which throws an error echoing its payload (message, cause and stack) for a job whose payload
 * holds canaries at a declared nested path (`customer.email`) and under a key the default list
 * matches by pattern (`accessToken`), and whose idempotency key and trace id quote them; an
 * operator's retry reason quotes one too. As viewer and as operator, every page, as HTML and
 * as the RSC payload, shows none of them anywhere; an exact key search does not find the job.
 * As admin the reveal returns them: they were really there.
 */
import { sql } from 'drizzle-orm';
import { enqueue } from '../db/queue/index.ts';
import { run } from '../db/queue/executor.ts';
import { test, expect, login, db, FROM_DASHBOARD, type Role } from './fixtures.ts';

const tag = Date.now().toString(36);
const EMAIL = `canary.${tag}@example.com`;
const TOKEN = `tok_canary_${tag}`;
const KEY = `welcome:${EMAIL}`;
/** Each canary as it could be spelled in a page: raw, JSON-escaped, URL-encoded. */
const FORMS = [EMAIL, TOKEN, encodeURIComponent(EMAIL)];

let jobId = '';

async function attemptsOf(id: string): Promise<{ state: string; attempts: number }> {
  const [row] = await run<{ state: string; attempts: number }>(
    db(),
    sql`SELECT state, attempts FROM leasehold.jobs WHERE id = ${id}::uuid`,
  );
  return row!;
}

async function untilDead(id: string, attempts: number) {
  await expect.poll(() => attemptsOf(id), { timeout: 30_000 }).toEqual({ state: 'dead', attempts });
}

test.describe.configure({ mode: 'serial' });

test.beforeAll(async () => {
  const { id } = await enqueue(db(), {
    queue: 'e2e-work',
    kind: 'test.leak',
    payload: { orderId: `order-${tag}`, customer: { email: EMAIL, name: 'Ada' }, accessToken: TOKEN },
    idempotencyKey: KEY,
    traceId: `trace-${TOKEN}`,
    maxAttempts: 1,
  });
  jobId = id;
  await untilDead(jobId, 1);
});

const PAGES = () => [
  '/',
  '/jobs',
  '/jobs?state=dead',
  `/jobs/${jobId}`,
  '/failures',
  '/audit',
  '/kinds',
  '/api/overview',
];

test('an operator retries the leaking job with a reason that quotes the customer', async ({ page }) => {
  await login(page, 'operator');
  const response = await page.request.post(`/api/jobs/${jobId}/retry`, {
    headers: FROM_DASHBOARD,
    data: { reason: `customer ${EMAIL} asked` },
  });
  expect(response.status()).toBe(200);
  await untilDead(jobId, 2);
});

for (const role of ['viewer', 'operator'] as const satisfies Role[]) {
  test(`${role}: no page shows the canary, as HTML or as RSC`, async ({ page }) => {
    await login(page, role);
    for (const path of PAGES()) {
      for (const headers of [{}, { RSC: '1' }] as Record<string, string>[]) {
        const response = await page.request.get(path, { headers });
        expect(response.status(), `${path} ${JSON.stringify(headers)}`).toBe(200);
        const body = await response.text();
        // An RSC request really got the flight payload, not the HTML again.
        if (headers.RSC && !path.startsWith('/api/'))
          expect(response.headers()['content-type']).toContain('text/x-component');
        for (const form of FORMS) expect(body, `${path} ${JSON.stringify(headers)} shows ${form}`).not.toContain(form);
      }
    }
    // The pages did show the job and its masked error (the check above read real content).
    const detail = await (await page.request.get(`/jobs/${jobId}`)).text();
    expect(detail).toContain('provider refused ••••••');
    expect(detail).toContain('welcome:••••••');
  });

  test(`${role}: an exact key search answers the canary's key as a missing one`, async ({ page }) => {
    await login(page, role);
    const found = await (await page.request.get(`/jobs?search=${encodeURIComponent(KEY)}`)).text();
    expect(found).not.toContain(jobId);
    expect(found).toContain('No jobs match.');
    // The job id itself is still found.
    expect(await (await page.request.get(`/jobs?search=${jobId}`)).text()).toContain(`/jobs/${jobId}`);
  });
}

test('admin: the reveal returns the canary, so it was really in the payload', async ({ page }) => {
  await login(page, 'admin');
  const response = await page.request.post(`/api/jobs/${jobId}/reveal`, { headers: FROM_DASHBOARD, data: {} });
  expect(response.status()).toBe(200);
  const revealed = await response.text();
  expect(revealed).toContain(EMAIL);
  expect(revealed).toContain(TOKEN);
  // The job page itself stays scrubbed for an admin too.
  const detail = await (await page.request.get(`/jobs/${jobId}`)).text();
  for (const form of FORMS) expect(detail).not.toContain(form);
});
