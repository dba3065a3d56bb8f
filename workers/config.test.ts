import { describe, expect, it } from 'vitest';
import { ConfigError, parseWorkerConfig } from './config.ts';

describe('worker settings', () => {
  it('reads flags over environment over defaults', () => {
    const config = parseWorkerConfig(['--queues', 'a,b', '--concurrency', '4', '--no-listen'], {
      LEASEHOLD_CONCURRENCY: '8',
      LEASEHOLD_LEASE_SECONDS: '12',
    });
    expect(config).toMatchObject({
      queues: ['a', 'b'],
      concurrency: 4,
      leaseSeconds: 12,
      listen: false,
      batchSize: 4,
      pollMs: 2000,
    });
    expect(config.workerId).toMatch(/:\d+:/);
  });

  it("serves the handlers' queues when no queue is named (an empty list here; the worker fills it in)", () => {
    expect(parseWorkerConfig([], {}).queues).toEqual([]);
    expect(parseWorkerConfig([], { LEASEHOLD_QUEUES: 'mail' }).queues).toEqual(['mail']);
  });

  it.each([
    [['--concurrency', 'lots'], /--concurrency \(LEASEHOLD_CONCURRENCY\) = "lots"/],
    [['--queues', 'bad queue'], /--queues/],
    [['--lease-seconds', '0'], /--lease-seconds/],
    [['--poll-ms', '-5'], /--poll-ms/],
    [['--colour', 'red'], /Unknown option '--colour'/],
    [
      ['--direct-url', 'db.internal:5432'],
      /--direct-url \(LEASEHOLD_DIRECT_URL\) = "db.internal:5432": not a postgres:\/\/ URL/,
    ],
  ])('stops start-up with a message naming the bad setting: %j', (argv, message) => {
    expect(() => parseWorkerConfig(argv as string[], {})).toThrow(ConfigError);
    expect(() => parseWorkerConfig(argv as string[], {})).toThrow(message);
  });

  it('claims at most 1,000 jobs at a time whatever the concurrency, and refuses a larger batch', () => {
    expect(parseWorkerConfig(['--concurrency', '2500'], {})).toMatchObject({ concurrency: 2500, batchSize: 1000 });
    expect(parseWorkerConfig(['--concurrency', '2500', '--batch-size', '300'], {})).toMatchObject({ batchSize: 300 });
    expect(() => parseWorkerConfig(['--batch-size', '1001'], {})).toThrow(/--batch-size/);
    expect(() => parseWorkerConfig(['--concurrency', '10001'], {})).toThrow(/--concurrency/);
  });

  it('claims wait for their WAL flush unless asynchronous claims are asked for', () => {
    expect(parseWorkerConfig([], {})).toMatchObject({ asyncClaims: false });
    expect(parseWorkerConfig(['--async-claims'], {})).toMatchObject({ asyncClaims: true });
    expect(parseWorkerConfig([], { LEASEHOLD_ASYNC_CLAIMS: 'true' })).toMatchObject({ asyncClaims: true });
    expect(parseWorkerConfig(['--no-async-claims'], { LEASEHOLD_ASYNC_CLAIMS: 'true' })).toMatchObject({
      asyncClaims: false,
    });
  });

  it('prepares statements and listens on DATABASE_URL unless told otherwise (behind PgBouncer: unnamed, direct URL)', () => {
    expect(parseWorkerConfig([], {})).toMatchObject({ preparedStatements: true, listen: true, directUrl: undefined });
    const direct = 'postgres://leasehold_worker@db.internal:5432/app';
    expect(
      parseWorkerConfig([], { LEASEHOLD_PREPARED_STATEMENTS: 'false', LEASEHOLD_DIRECT_URL: direct }),
    ).toMatchObject({ preparedStatements: false, listen: true, directUrl: direct });
    expect(parseWorkerConfig(['--no-prepared-statements', '--direct-url', direct], {})).toMatchObject({
      preparedStatements: false,
      directUrl: direct,
    });
  });

  it('names a bad environment variable too', () => {
    expect(() => parseWorkerConfig([], { LEASEHOLD_LISTEN: 'maybe' })).toThrow(/LEASEHOLD_LISTEN/);
  });
});
