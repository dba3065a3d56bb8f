/**
 * deploy/prometheus/leasehold-rules.yml, the alerting rules Leasehold ships: promtool finds them
 * valid and their unit tests (leasehold-rules.test.yml) pass; every metric a rule reads is one
 * the dashboard's /api/metrics prints (lib/metrics-text.ts); every alert has a case where it
 * fires and one where it does not. No database is used.
 *
 * promtool is Debian's prometheus package (scripts/test-deps.sh installs it), looked for at
 * PROMTOOL, else /usr/bin/promtool. Without it the promtool tests fail in CI and are skipped
 * elsewhere, saying so.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { MetricsDTO } from '../../lib/dto.ts';
import { metricsText } from '../../lib/metrics-text.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const RULES = 'deploy/prometheus/leasehold-rules.yml';
const RULE_TESTS = 'deploy/prometheus/leasehold-rules.test.yml';
const PROMTOOL = process.env.PROMTOOL || '/usr/bin/promtool';
const MISSING = `promtool is not installed (looked for ${PROMTOOL}; set PROMTOOL to its path): \`bash scripts/test-deps.sh\` installs it (Debian's prometheus package).`;

const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');

/** Runs promtool from the repository's root; its exit status and everything it printed. */
function promtool(args: string[]): { status: number | null; output: string } {
  const run = spawnSync(PROMTOOL, args, { cwd: ROOT, encoding: 'utf8', timeout: 30_000 });
  return { status: run.status, output: `${run.stdout}${run.stderr}${run.error ? String(run.error) : ''}` };
}

describe('promtool on the alerting rules', () => {
  const missing = !existsSync(PROMTOOL);

  it.for([
    { name: 'check rules', args: ['check', 'rules', RULES], success: /SUCCESS: \d+ rules found/ },
    { name: 'test rules', args: ['test', 'rules', RULE_TESTS], success: /SUCCESS/ },
  ])('promtool $name passes', ({ args, success }, context) => {
    if (missing) {
      // In CI the rules must be checked: a missing promtool is a failure, not a skip.
      if (process.env.CI) throw new Error(MISSING);
      return context.skip(MISSING);
    }
    const run = promtool(args);
    expect(run.status, run.output).toBe(0);
    expect(run.output).toMatch(success);
    expect(run.output).not.toMatch(/FAILED/);
  });
});

/** A MetricsDTO with at least one queue, alert (of each figure), check, table and connection. */
const FIXTURE: MetricsDTO = {
  queues: [
    {
      queue: 'mail',
      paused: false,
      ready: 1,
      scheduled: 0,
      retrying: 0,
      running: 1,
      leaseExpired: 0,
      dead: 2,
      cancelled: 0,
      doneLastHour: 5,
      oldestReadyAgeSeconds: 12,
      waitingForKind: 1,
    },
  ],
  dead: [{ queue: 'mail', failureClass: 'permanent', count: 2 }],
  notifyQueueUsage: 0.01,
  limits: [],
  groups: [],
  schedules: [],
  alerts: [
    { queue: 'mail', alert: 'oldest_ready_age_seconds', threshold: 300, firing: false },
    { queue: 'mail', alert: 'dead', threshold: 1, firing: true },
    { queue: 'mail', alert: 'waiting_for_kind', threshold: 1, firing: true },
  ],
  health: {
    checks: [{ check: 'horizon', state: 'critical' }],
    tables: [{ table: 'jobs', liveTuples: 10, deadTuples: 1, bytes: 8192, bloatBytes: 0 }],
    horizonAgeSeconds: 400,
    horizonXidAge: 1000,
    autovacuum: true,
    connections: [{ application: 'leasehold-worker', count: 3 }],
  },
};

/** Each rule's `expr:` text (a one-line value, or a folded block up to the rule's next key). */
function expressions(rules: string): string[] {
  return [...rules.matchAll(/^\s+expr: *(?:>-?\n)?([\s\S]*?)(?=^\s+(?:for|labels|annotations):)/gm)].map((m) => m[1]!);
}

describe('the metrics the rules read', () => {
  const exprs = expressions(read(RULES));
  const text = metricsText(FIXTURE);
  const printed = [...text.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]!);

  it('finds an expression in every rule', () => {
    const alerts = read(RULES).match(/^\s+- alert: /gm) ?? [];
    expect(alerts.length).toBeGreaterThan(0);
    expect(exprs).toHaveLength(alerts.length);
  });

  it('are each printed by metricsText(), with a sample', () => {
    const used = [...new Set(exprs.flatMap((e) => e.match(/leasehold_[a-z_]+/g) ?? []))].sort();
    expect(used.length).toBeGreaterThan(0);
    expect(used.filter((name) => !printed.includes(name))).toEqual([]);
    expect(used.filter((name) => !new RegExp(`^${name}(\\{| )`, 'm').test(text))).toEqual([]);
  });

  it('select by `alert` only the figures the metrics label their thresholds with', () => {
    const figures = [...new Set(exprs.flatMap((e) => [...e.matchAll(/alert="([^"]+)"/g)].map((m) => m[1]!)))];
    expect(figures.length).toBeGreaterThan(0);
    expect(figures.filter((f) => !text.includes(`leasehold_queue_alert_threshold{queue="mail",alert="${f}"}`))).toEqual(
      [],
    );
  });
});

/**
 * The cases of leasehold-rules.test.yml by alert: in each alert_rule_test, `alertname:` comes
 * before `exp_alerts:`, which is `[]` (it does not fire) or a list (it fires).
 */
function cases(tests: string): Map<string, { fires: number; quiet: number }> {
  const found = new Map<string, { fires: number; quiet: number }>();
  let current: string | undefined;
  for (const line of tests.split('\n')) {
    const name = /^\s*-?\s*alertname:\s*(\S+)/.exec(line);
    if (name) current = name[1]!;
    const expected = /^\s*-?\s*exp_alerts:\s*(.*)$/.exec(line);
    if (!expected || current === undefined) continue;
    const entry = found.get(current) ?? { fires: 0, quiet: 0 };
    if (expected[1]!.trim() === '[]') entry.quiet++;
    else entry.fires++;
    found.set(current, entry);
    current = undefined;
  }
  return found;
}

describe('the unit tests of the rules', () => {
  it('have, for every alert, a case where it fires and one where it does not', () => {
    const alerts = [...read(RULES).matchAll(/^\s+- alert:\s*(\S+)/gm)].map((m) => m[1]!);
    const found = cases(read(RULE_TESTS));
    expect(alerts.length).toBeGreaterThan(0);
    expect(alerts.filter((a) => !(found.get(a)?.fires ?? 0))).toEqual([]);
    expect(alerts.filter((a) => !(found.get(a)?.quiet ?? 0))).toEqual([]);
    // No case tests an alert the rules do not have.
    expect([...found.keys()].filter((a) => !alerts.includes(a))).toEqual([]);
  });
});
