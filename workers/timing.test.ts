import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { backoff, dbErrorInWords, every, isRetryableDbError, retryWhileUnavailable, sleep } from './timing.ts';

describe('timing', () => {
  it('cuts a sleep short when its signal aborts, and does not sleep on an aborted one', async () => {
    const controller = new AbortController();
    const started = performance.now();
    setTimeout(() => controller.abort(), 20);
    await sleep(60_000, controller.signal);
    expect(performance.now() - started).toBeLessThan(5000);
    const again = performance.now();
    await sleep(60_000, controller.signal);
    expect(performance.now() - again).toBeLessThan(100);
  });

  it('runs a task every period, goes on after it fails, and stops with the signal', async () => {
    const controller = new AbortController();
    const warnings: unknown[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => warnings.push(JSON.parse(line)) });
    let runs = 0;
    const loop = every(
      10,
      () => {
        runs += 1;
        if (runs === 2) throw new Error('second run fails');
        if (runs === 4) controller.abort();
      },
      controller.signal,
      logger,
      'counting',
    );
    await loop;
    expect(runs).toBe(4);
    expect(warnings).toMatchObject([{ task: 'counting', msg: 'background task failed; it runs again next round' }]);
  });

  it('backs off from 100–200 ms, doubling, to at most 30 s', () => {
    for (let i = 0; i < 50; i++) {
      expect(backoff(1)).toBeGreaterThanOrEqual(100);
      expect(backoff(1)).toBeLessThanOrEqual(200);
      expect(backoff(4)).toBeGreaterThanOrEqual(800);
      expect(backoff(100)).toBeLessThanOrEqual(30_000);
      expect(backoff(100)).toBeGreaterThanOrEqual(15_000);
    }
  });

  it('retries connection, shutdown, overload and serialization errors, not the others', () => {
    const withCode = (code: string) => Object.assign(new Error('x'), { code });
    for (const code of ['08006', '40001', '53300', '57P01', 'ECONNREFUSED', 'ECONNRESET', 'EPIPE']) {
      expect(isRetryableDbError(withCode(code)), code).toBe(true);
    }
    for (const code of ['23505', '42601', '22P02', 'ENOENT'])
      expect(isRetryableDbError(withCode(code)), code).toBe(false);
    expect(isRetryableDbError(new Error('Connection terminated unexpectedly'))).toBe(true);
    // As Drizzle hands on a driver error without a code: wrapped, the reason in its cause.
    const wrapped = new Error('Failed query: select 1', { cause: new Error('Connection terminated unexpectedly') });
    expect(isRetryableDbError(wrapped)).toBe(true);
    expect(isRetryableDbError(new Error('Failed query: x', { cause: withCode('23505') }))).toBe(false);
    expect(isRetryableDbError('a string')).toBe(false);
    expect(isRetryableDbError(new Error('syntax error'))).toBe(false);
  });

  it('tries again while the database is unavailable, and stops at the deadline, a stop or another error', async () => {
    const refused = () => Object.assign(new Error('refused'), { code: 'ECONNREFUSED' });
    let calls = 0;
    const retried: unknown[] = [];
    const value = await retryWhileUnavailable(
      async () => {
        calls += 1;
        if (calls < 3) throw refused();
        return 'up';
      },
      { deadlineMs: performance.now() + 10_000, onRetry: (e) => retried.push(e) },
    );
    expect([value, calls, retried.length]).toEqual(['up', 3, 2]);

    // A deadline nearer than the first backoff (100 ms or more): one try only.
    let once = 0;
    const late = retryWhileUnavailable(
      async () => {
        once += 1;
        throw refused();
      },
      { deadlineMs: performance.now() + 50, onRetry: () => {} },
    );
    await expect(late).rejects.toThrow('refused');
    expect(once).toBe(1);

    // Stopped during the wait: no further try.
    const controller = new AbortController();
    let tries = 0;
    const stopped = retryWhileUnavailable(
      async () => {
        tries += 1;
        throw refused();
      },
      {
        deadlineMs: performance.now() + 60_000,
        onRetry: () => setTimeout(() => controller.abort(), 10),
        signal: controller.signal,
      },
    );
    await expect(stopped).rejects.toThrow('refused');
    expect(tries).toBe(1);

    // An error that waiting cannot fix is thrown at once.
    let other = 0;
    const fatal = retryWhileUnavailable(
      async () => {
        other += 1;
        throw Object.assign(new Error('no such table'), { code: '42P01' });
      },
      { deadlineMs: performance.now() + 60_000, onRetry: () => {} },
    );
    await expect(fatal).rejects.toThrow('no such table');
    expect(other).toBe(1);
  });
});

describe('dbErrorInWords', () => {
  it('says a connection refused on every address of a host, which AggregateError leaves unsaid, in one line', () => {
    const refused = (address: string) =>
      Object.assign(new Error(`connect ECONNREFUSED ${address}`), { code: 'ECONNREFUSED' });
    const both = Object.assign(new AggregateError([refused('::1:5999'), refused('127.0.0.1:5999')], ''), {
      code: 'ECONNREFUSED',
    });
    expect(dbErrorInWords(both)).toBe('connect ECONNREFUSED ::1:5999; connect ECONNREFUSED 127.0.0.1:5999');
    const shutdown = Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' });
    expect(dbErrorInWords(shutdown)).toBe('terminating connection due to administrator command (57P01)');
    expect(dbErrorInWords(new Error('Failed query: select 1', { cause: shutdown }))).toBe(
      'terminating connection due to administrator command (57P01)',
    );
  });
});
