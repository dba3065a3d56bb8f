import { readFileSync } from 'node:fs';
import path from 'node:path';
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

  it('loads every handlers file named, whether repeated or comma-separated', () => {
    expect(parseWorkerConfig(['--handlers', 'a.mjs', '--handlers', 'b.mjs'], {}).handlerModules).toEqual([
      'a.mjs',
      'b.mjs',
    ]);
    expect(parseWorkerConfig(['--handlers', 'a.mjs,b.mjs'], {}).handlerModules).toEqual(['a.mjs', 'b.mjs']);
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

  it('serves metrics on 127.0.0.1 and /healthz on every interface unless told otherwise, neither by default', () => {
    expect(parseWorkerConfig([], {})).toMatchObject({
      metricsPort: 0,
      metricsHost: '127.0.0.1',
      healthPort: 0,
      healthHost: '0.0.0.0',
    });
    expect(
      parseWorkerConfig(['--health-port', '8081', '--metrics-host', '0.0.0.0'], {
        LEASEHOLD_METRICS_PORT: '9464',
        LEASEHOLD_HEALTH_HOST: '10.0.0.7',
      }),
    ).toMatchObject({ metricsPort: 9464, metricsHost: '0.0.0.0', healthPort: 8081, healthHost: '10.0.0.7' });
    expect(parseWorkerConfig(['--health-host', '::', '--metrics-host', 'localhost'], {})).toMatchObject({
      healthHost: '::',
      metricsHost: 'localhost',
    });
  });

  it('takes one port for /metrics and /healthz only with one host for both', () => {
    expect(
      parseWorkerConfig(['--health-port', '9464', '--metrics-port', '9464', '--health-host', '127.0.0.1'], {}),
    ).toMatchObject({ healthPort: 9464, metricsPort: 9464, healthHost: '127.0.0.1', metricsHost: '127.0.0.1' });
    const differing = () => parseWorkerConfig(['--health-port', '9464', '--metrics-port', '9464'], {});
    expect(differing).toThrow(ConfigError);
    expect(differing).toThrow(
      /--health-port and --metrics-port are both 9464.*--health-host \(LEASEHOLD_HEALTH_HOST\) is 0\.0\.0\.0 and --metrics-host \(LEASEHOLD_METRICS_HOST\) 127\.0\.0\.1/,
    );
  });

  it('bounds a stale claim loop at max(30 s, 5 polls) unless told, and above a poll and its jitter', () => {
    expect(parseWorkerConfig([], {}).claimStaleMs).toBe(30_000);
    expect(parseWorkerConfig(['--poll-ms', '10000'], {}).claimStaleMs).toBe(50_000);
    expect(parseWorkerConfig([], { LEASEHOLD_CLAIM_STALE_MS: '4000' }).claimStaleMs).toBe(4000);
    const tight = () => parseWorkerConfig(['--poll-ms', '5000', '--claim-stale-ms', '6000'], {});
    expect(tight).toThrow(ConfigError);
    expect(tight).toThrow(
      '--claim-stale-ms (LEASEHOLD_CLAIM_STALE_MS) = 6000 must exceed --poll-ms × 1.2 (6000 ms: a poll may take that long)',
    );
  });

  it('gives jobs of a kind no live worker runs 24 h before they end dead, unless told', () => {
    expect(parseWorkerConfig([], {}).maintenance.unknownKindGraceMs).toBe(86_400_000);
    expect(parseWorkerConfig(['--unknown-kind-grace-ms', '0'], {}).maintenance.unknownKindGraceMs).toBe(0);
    expect(parseWorkerConfig([], { LEASEHOLD_UNKNOWN_KIND_GRACE_MS: '3600000' }).maintenance.unknownKindGraceMs).toBe(
      3_600_000,
    );
  });

  it.each([
    [['--health-port', '70000'], /--health-port \(LEASEHOLD_HEALTH_PORT\) = "70000"/],
    [['--health-port', 'http'], /--health-port \(LEASEHOLD_HEALTH_PORT\) = "http"/],
    [['--health-host', 'every interface'], /--health-host \(LEASEHOLD_HEALTH_HOST\) = "every interface": not an IP/],
    [['--metrics-host', 'http://0.0.0.0'], /--metrics-host \(LEASEHOLD_METRICS_HOST\) = "http:\/\/0.0.0.0": not an IP/],
    [['--claim-stale-ms', 'soon'], /--claim-stale-ms \(LEASEHOLD_CLAIM_STALE_MS\) = "soon"/],
    [['--claim-stale-ms', '50'], /--claim-stale-ms \(LEASEHOLD_CLAIM_STALE_MS\) = "50"/],
    [['--unknown-kind-grace-ms=-1'], /--unknown-kind-grace-ms \(LEASEHOLD_UNKNOWN_KIND_GRACE_MS\) = "-1"/],
    [['--unknown-kind-grace-ms', '1.5'], /--unknown-kind-grace-ms \(LEASEHOLD_UNKNOWN_KIND_GRACE_MS\) = "1.5"/],
    [
      ['--unknown-kind-grace-ms', String(366 * 86_400_000)],
      /--unknown-kind-grace-ms \(LEASEHOLD_UNKNOWN_KIND_GRACE_MS\) = "31622400000"/,
    ],
  ])('refuses a bad health, metrics or grace setting, naming it: %j', (argv, message) => {
    expect(() => parseWorkerConfig(argv as string[], {})).toThrow(ConfigError);
    expect(() => parseWorkerConfig(argv as string[], {})).toThrow(message);
  });

  it.each([
    ['LEASEHOLD_HEALTH_PORT', '-1'],
    ['LEASEHOLD_HEALTH_HOST', 'a b'],
    ['LEASEHOLD_METRICS_HOST', '127.0.0.1:9464'],
    ['LEASEHOLD_CLAIM_STALE_MS', '1e99'],
    ['LEASEHOLD_UNKNOWN_KIND_GRACE_MS', 'a day'],
  ])('names the variable when %s is bad (%s)', (name, value) => {
    expect(() => parseWorkerConfig([], { [name]: value })).toThrow(`(${name}) = ${JSON.stringify(value)}`);
  });

  it('reads queue limits: a maximum, a rate, or both, comma-separated, from the flag (repeatable) or its variable', () => {
    expect(parseWorkerConfig([], {}).queueLimits).toEqual({});
    expect(
      parseWorkerConfig(['--queue-limits', 'emails=10, bulk=100/1s,imports=2+50/1m,tiny=3/500ms,slow=1/60000'], {})
        .queueLimits,
    ).toEqual({
      emails: { max: 10 },
      bulk: { rate: { max: 100, perMs: 1000 } },
      imports: { max: 2, rate: { max: 50, perMs: 60_000 } },
      tiny: { rate: { max: 3, perMs: 500 } },
      slow: { rate: { max: 1, perMs: 60_000 } },
    });
    expect(parseWorkerConfig(['--queue-limits', 'a=1', '--queue-limits', 'b=2/1h'], {}).queueLimits).toEqual({
      a: { max: 1 },
      b: { rate: { max: 2, perMs: 3_600_000 } },
    });
    expect(parseWorkerConfig([], { LEASEHOLD_QUEUE_LIMITS: 'emails=1000000' }).queueLimits).toEqual({
      emails: { max: 1_000_000 },
    });
  });

  it.each([
    ['emails', /"emails": expected QUEUE=MAX, QUEUE=N\/INTERVAL or QUEUE=MAX\+N\/INTERVAL/],
    ['bad queue=3', /"bad queue=3": "bad queue" is not a queue name/],
    ['=3', /"=3": "" is not a queue name/],
    ['emails=0', /"emails=0": the maximum must be a whole number from 1 to 1000000, not "0"/],
    ['emails=1000001', /"emails=1000001": the maximum must be a whole number from 1 to 1000000, not "1000001"/],
    ['emails=2.5', /"emails=2\.5": the maximum must be a whole number/],
    ['emails=', /"emails=": the maximum must be a whole number from 1 to 1000000, not ""/],
    ['bulk=100/1y', /"bulk=100\/1y": the rate must be N\/INTERVAL .*, not "100\/1y"/],
    ['bulk=0/1s', /"bulk=0\/1s": the rate must be N\/INTERVAL/],
    ['bulk=10/25h', /"bulk=10\/25h": the rate must be N\/INTERVAL .* INTERVAL from 1ms to 24h/],
    ['imports=2+', /"imports=2\+": the rate must be N\/INTERVAL .*, not ""/],
    ['imports=x+5/1s', /"imports=x\+5\/1s": the maximum must be a whole number from 1 to 1000000, not "x"/],
    ['a=1,a=2', /"a=2": the queue a has a limit already/],
  ])('refuses a bad --queue-limits entry, naming the entry and what is wrong: %s', (value, message) => {
    const fromFlag = () => parseWorkerConfig(['--queue-limits', value], {});
    expect(fromFlag).toThrow(ConfigError);
    expect(fromFlag).toThrow(`--queue-limits (LEASEHOLD_QUEUE_LIMITS) = ${JSON.stringify(value)}: `);
    expect(fromFlag).toThrow(message);
    expect(() => parseWorkerConfig([], { LEASEHOLD_QUEUE_LIMITS: value })).toThrow(message);
  });

  it('names every bad entry of --queue-limits, one line each', () => {
    expect(() => parseWorkerConfig(['--queue-limits', 'a=0,b=1,c=5/1y'], {})).toThrow(
      /"a=0": the maximum[^\n]*\n\s*--queue-limits \(LEASEHOLD_QUEUE_LIMITS\) = "a=0,b=1,c=5\/1y": "c=5\/1y": the rate/,
    );
  });

  it('names a bad environment variable too', () => {
    expect(() => parseWorkerConfig([], { LEASEHOLD_LISTEN: 'maybe' })).toThrow(/LEASEHOLD_LISTEN/);
  });

  it('points an unknown flag at the page whose table lists the flags', () => {
    expect(() => parseWorkerConfig(['--colour', 'red'], {})).toThrow(
      '(the settings: leasehold workers --help, or docs/operations.md, "Settings")',
    );
    const page = readFileSync(path.join(import.meta.dirname, '..', 'docs', 'operations.md'), 'utf8');
    const section = page.slice(page.indexOf('\n## Settings\n'));
    expect(section.slice(0, section.indexOf('\n## ', 1))).toContain('`--concurrency N`');
  });
});
