/**
 * The worker settings table (workers/settings.ts) against what reads settings: the CLI's
 * argument parser, the variables read in workers/ and cli/workers.ts, and the options
 * createWorker takes. Each check fails on a name missing on either side. (--help is checked
 * in cli/workers.test.ts, the docs tables in scripts/settings-docs.test.ts.) And the one path
 * from settings to a Worker: the CLI's worker goes through createWorker, losing no setting,
 * and no product file but workers/create-worker.ts builds a Worker.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import { PACKAGE_FOLDERS } from '../test/product-files.ts';
import { parseWorkerConfig, type WorkerConfig, workerFlagOptions } from './config.ts';
import { type CreateWorkerOptions, parseOptions } from './create-worker.ts';
import { defineHandler, HandlerRegistry } from './handler.ts';
import { handlerQueues } from './producer.ts';
import { workerOptionsOf } from './run-process.ts';
import {
  cliSettings,
  NOT_WORKER_SETTINGS,
  optionKeys,
  settingEntries,
  WORKER_SETTINGS,
  type WorkerOptionKey,
  type WorkerSetting,
} from './settings.ts';

const ROOT = path.join(import.meta.dirname, '..');
/** The product folders (test/product-files.ts's one list). */
const PRODUCT = PACKAGE_FOLDERS;

/** Variables a source file reads (`env.X`, `process.env.X`, `env['X']`) or names (`LEASEHOLD_X`). */
function variablesIn(source: string): Set<string> {
  const names = new Set<string>();
  for (const m of source.matchAll(/\benv\??\.([A-Za-z_][A-Za-z0-9_]*)/g)) names.add(m[1]!);
  for (const m of source.matchAll(/\benv\[\s*['"`]([A-Za-z_][A-Za-z0-9_]*)['"`]\s*\]/g)) names.add(m[1]!);
  for (const m of source.matchAll(/\bLEASEHOLD_[A-Z0-9_]*[A-Z0-9]\b/g)) names.add(m[0]);
  return names;
}

/** A value of each text setting that is not its default. */
const TEXT_SAMPLES: Record<string, string> = {
  queues: 'mail,sms',
  // Of a queue the test's handler serves (`default`): createWorker refuses a limit of another.
  queueLimits: 'default=2+10/1s',
  directUrl: 'postgres://leasehold@db.internal:5432/app',
  metricsHost: '10.0.0.7',
  healthHost: '10.0.0.8',
  retentionDone: '2d',
  retentionDead: '30d',
  retentionCancelled: '3d',
  retentionAttempts: '20d',
  retentionQueue: 'audit:dead=90d',
  handlers: 'a.mjs,b.mjs',
  workerId: 'worker-7',
  logLevel: 'debug',
};

/** The config without its random worker id (unless that is what is compared). */
const configOf = (argv: string[], env: Record<string, string>, key: string) => {
  const { workerId, ...rest } = parseWorkerConfig(argv, env);
  return key === 'workerId' ? { workerId } : rest;
};

/** A value of the CLI setting `key`, as its variable gives it, that changes the config (undefined: none does). */
function changingValue(key: string, s: WorkerSetting & { env: string }): string | undefined {
  const fallback = configOf([], {}, key);
  const candidates =
    s.type === 'int'
      ? [s.min!, s.max!, s.min! + 1].map(String)
      : s.type === 'boolean'
        ? [String(!s.default)]
        : [TEXT_SAMPLES[key]!];
  return candidates.find((v) => {
    try {
      return JSON.stringify(configOf([], { [s.env]: v }, key)) !== JSON.stringify(fallback);
    } catch {
      return false;
    }
  });
}

const noop = defineHandler({
  kind: 'settings.noop',
  versions: [1],
  schema: z.unknown(),
  timeoutMs: 1000,
  handle: async () => {},
});

/** The Worker settings of a CLI config as the CLI's worker had them: the config less the process's own. */
function cliWorkerSettings(config: WorkerConfig) {
  const {
    directUrl: _directUrl,
    metricsPort: _metricsPort,
    metricsHost: _metricsHost,
    healthPort: _healthPort,
    healthHost: _healthHost,
    claimStaleMs: _claimStaleMs,
    handlerModules: _handlerModules,
    logLevel: _logLevel,
    migrate: _migrate,
    ...settings
  } = config;
  // None named: the Worker serves its handlers' queues.
  return settings.queues.length > 0 ? settings : { ...settings, queues: handlerQueues(new HandlerRegistry([noop])) };
}

/** What createWorker makes of a CLI config, as run-process.ts passes it. */
function throughCreateWorker(config: WorkerConfig) {
  const { options, internal } = workerOptionsOf(config, { connectionString: 'postgres://db/app', jobs: [noop] });
  return parseOptions(options, internal);
}

describe('the worker settings table', () => {
  it('is what the argument parser takes: every flag of it (and --no- of each boolean), and no other', () => {
    const expected = cliSettings().flatMap(([, s]) => (s.type === 'boolean' ? [s.flag, `no-${s.flag}`] : [s.flag]));
    expect(Object.keys(workerFlagOptions()).sort()).toEqual(expected.sort());
    for (const [key, s] of cliSettings()) expect(s.flag, key).toBe(key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`));
  });

  it('has each CLI setting read from its variable as from its flag, and changing the setting', () => {
    expect(Object.keys(TEXT_SAMPLES).sort()).toEqual(
      cliSettings()
        .filter(([, s]) => s.type === 'text')
        .map(([key]) => key)
        .sort(),
    );
    for (const [key, s] of cliSettings()) {
      const value = changingValue(key, s);
      expect(value, `${s.env} changes ${key}`).toBeDefined();
      const flag =
        s.type === 'boolean' ? [value === 'true' ? `--${s.flag}` : `--no-${s.flag}`] : [`--${s.flag}=${value}`];
      expect(configOf(flag, {}, key), `--${s.flag} as ${s.env}`).toEqual(configOf([], { [s.env]: value! }, key));
    }
  });

  it('names every variable read or named in workers/ and cli/workers.ts, as a setting or as not one', () => {
    const files = [
      ...readdirSync(path.join(ROOT, 'workers'))
        .filter((f) => f.endsWith('.ts') && !/\.test(-d)?\.ts$/.test(f))
        .map((f) => path.join('workers', f)),
      path.join('cli', 'workers.ts'),
    ];
    const known = new Set<string>([...cliSettings().map(([, s]) => s.env), ...Object.keys(NOT_WORKER_SETTINGS)]);
    const unknown = files.flatMap((file) =>
      [...variablesIn(readFileSync(path.join(ROOT, file), 'utf8'))]
        .filter((name) => !known.has(name))
        .map((name) => `${file}: ${name}`),
    );
    expect(unknown).toEqual([]);
  });

  it('is what createWorker takes: every option of it, and no other', () => {
    expectTypeOf<keyof CreateWorkerOptions>().toEqualTypeOf<WorkerOptionKey>();
    const handler = noop;
    const problemsWith = (key: string) => {
      try {
        parseOptions({ connectionString: 'postgres://db/app', jobs: [handler], [key]: undefined });
        return '';
      } catch (error) {
        return (error as Error).message;
      }
    };
    for (const key of optionKeys()) expect(problemsWith(key), key).not.toContain(`${key}: not an option`);
    for (const [key] of settingEntries().filter(([, s]) => !s.option))
      expect(problemsWith(key), key).toContain(`${key}: not an option`);
  });

  const table: Record<string, WorkerSetting> = WORKER_SETTINGS;

  it("has createWorker's documented defaults (CreateWorkerOptions) say the table's", () => {
    const source = readFileSync(path.join(ROOT, 'workers', 'create-worker.ts'), 'utf8');
    const face = source.slice(source.indexOf('export interface CreateWorkerOptions'));
    let checked = 0;
    for (const key of optionKeys()) {
      const s = table[key]!;
      if (s.default === undefined) continue;
      const doc = new RegExp(`/\\*\\*((?:(?!\\*/)[\\s\\S])*)\\*/\\s*${key}\\?:`).exec(face)?.[1] ?? '';
      expect(doc, key).toContain(`(default ${s.default}`);
      checked += 1;
    }
    expect(checked).toBeGreaterThan(8);
  });

  it('checks a whole-number setting against one range on both sides', () => {
    let checked = 0;
    for (const [key, s] of settingEntries()) {
      if (s.type !== 'int' || !s.option || !s.flag) continue;
      checked += 1;
      const { min = 0, max = 0, flag } = s;
      for (const outside of [min - 1, max + 1]) {
        expect(() => parseWorkerConfig([`--${flag}=${outside}`], {}), `--${flag}=${outside}`).toThrow(`--${flag}`);
        expect(
          () => parseOptions({ connectionString: 'postgres://db/app', jobs: [], [key]: outside }),
          `${key}: ${outside}`,
        ).toThrow(`${key}: must be a whole number from ${min} to ${max}`);
      }
    }
    expect(checked).toBeGreaterThan(5);
    expect(WORKER_SETTINGS.concurrency).toMatchObject({ min: 1, max: 10_000, default: 10 });
  });
});

describe('the one way to a Worker', () => {
  it("builds the CLI's worker through createWorker with every setting the CLI parsed, one by one", () => {
    const configs: [string, WorkerConfig][] = [['the defaults', parseWorkerConfig([], {})]];
    for (const [key, s] of cliSettings()) {
      const value = changingValue(key, s);
      if (value !== undefined) configs.push([`${s.env}=${value}`, parseWorkerConfig([], { [s.env]: value })]);
    }
    expect(configs.length).toBeGreaterThan(cliSettings().length);
    for (const [what, config] of configs) {
      const parsed = throughCreateWorker(config);
      expect(parsed.settings, what).toEqual(cliWorkerSettings(config));
      expect(parsed.claimStaleMs, what).toBe(config.claimStaleMs);
    }
  });

  it('has no product file but workers/create-worker.ts build a Worker (the CLI calls createWorker)', () => {
    const files = PRODUCT.flatMap((folder) =>
      readdirSync(path.join(ROOT, folder), { recursive: true, withFileTypes: true })
        .filter((e) => e.isFile() && /\.tsx?$/.test(e.name) && !/\.test(-d)?\.tsx?$/.test(e.name))
        .map((e) => path.relative(ROOT, path.join(e.parentPath, e.name)).split(path.sep).join('/')),
    );
    expect(files).toContain('workers/run-process.ts');
    const builders = files.filter((file) => {
      const source = readFileSync(path.join(ROOT, file), 'utf8');
      // The Worker class taken as a value from workers/worker.ts, or a `new Worker(` that is not node's thread.
      const imported = [...source.matchAll(/import\s*\{([^}]*)\}\s*from\s*'[^']*worker\.ts'/g)].some(([, names]) =>
        names!.split(',').some((name) => name.trim().split(/\s+as\s+/)[0] === 'Worker'),
      );
      const threads = /import\s*\{[^}]*\bWorker\b[^}]*\}\s*from\s*'node:worker_threads'/.test(source);
      return imported || (/\bnew\s+Worker\s*\(/.test(source) && !threads);
    });
    expect(builders).toEqual(['workers/create-worker.ts']);
  });
});
