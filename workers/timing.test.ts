import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { backoff, every, isRetryableDbError, sleep } from './timing';

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
    expect(isRetryableDbError(new Error('syntax error'))).toBe(false);
  });
});
