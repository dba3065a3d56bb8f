/**
 * The state machine is closed: only the transitions (db/queue/transitions.ts, its face, and
 * the flow files behind it in db/queue/transitions/) write a job's state. A product file that
 * updates or inserts `leasehold.jobs`, or sets a `state`, outside them fails here unless it is
 * on WRITERS below with its reason. The database functions that move jobs
 * (leasehold.operator_retry, leasehold.operator_cancel; the support actions' operator_run_now,
 * operator_reschedule, operator_set_priority, operator_rerun and operator_purge_dead) are called
 * by db/queue/operator.ts and db/queue/support-actions.ts and count as inside: they are rows of EDGES, covered by db/queue/model.test.ts (checked
 * below too). The failure harness's guard-skipping claim (transitions/unguarded-claim.ts) is
 * reachable from workers/failpoints.ts alone (which loads it by its address, `new URL(…,
 * import.meta.url)`, so that the package does not have it: test/unguarded-claim-reach.test.ts),
 * and transitions/ only through its face.
 */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { EDGES } from '../db/queue/transitions.ts';
import { lineOf, productFiles, sourceOf } from './product-files.ts';

/** What writes a job's state: a statement on the jobs table (a DELETE too), or a `SET state` anywhere. */
const WRITES = [
  /\bUPDATE\s+leasehold\.jobs\b/gi,
  /\bINSERT\s+INTO\s+leasehold\.jobs\b/gi,
  /\bDELETE\s+FROM\s+leasehold\.jobs\b/gi,
  /\bSET\s+state\b/gi,
  // Drizzle's query builder on the jobs table (db/schema.ts's `jobs`).
  /\.(?:update|insert)\(\s*jobs\s*\)/g,
];

const TRANSITIONS = (file: string) => file === 'db/queue/transitions.ts' || file.startsWith('db/queue/transitions/');

/** Files outside the transitions that must keep writing the jobs table, and why. */
const WRITERS: Record<string, string> = {
  'db/queue/enqueue-sql.ts':
    "enqueue, EDGES' first row (null → ready): the jobs' INSERT. Its plpgsql twin leasehold.enqueue() " +
    '(drizzle/0011) is held equal by db/surface.test.ts; both exist for the single enqueue figures (see the file)',
  'db/queue/retention.ts':
    "retention, EDGES' done/dead/cancelled → null rows (removeExpiredHistory): deletes finished jobs only " +
    '(state re-checked under the row lock) in the same statement as their attempts and keys; moves no job between states',
  'testing/clock.ts':
    "the test clock's shift: moves every timestamp of every row back by the same amount; sets no state",
};

function writesIn(source: string): { line: number; text: string }[] {
  return WRITES.flatMap((pattern) =>
    [...source.matchAll(pattern)].map((m) => ({ line: lineOf(source, m.index), text: m[0] })),
  );
}

/**
 * The relative module specifiers a source imports, re-exports or names as an address
 * (`new URL('…', import.meta.url)`, loaded later), resolved against its file.
 */
function importsOf(file: string, source: string): string[] {
  const specifiers = [
    ...source.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+|\bnew\s+URL\s*\(\s*)['"](\.[^'"]+)['"]/g),
  ];
  return specifiers.map((m) => path.posix.normalize(path.posix.join(path.posix.dirname(file), m[1]!)));
}

describe('the closed state machine', () => {
  const files = productFiles();

  it('has no product file outside the transitions that writes a job', () => {
    const leaks = files
      .filter((file) => !TRANSITIONS(file) && !(file in WRITERS))
      .flatMap((file) => writesIn(sourceOf(file)).map((w) => `${file}:${w.line}: ${w.text}`));
    expect(leaks).toEqual([]);
  });

  it('allows only writers that still write, each with its reason', () => {
    for (const [file, reason] of Object.entries(WRITERS)) {
      expect(files, file).toContain(file);
      expect(writesIn(sourceOf(file)), file).not.toEqual([]);
      expect(reason.length, file).toBeGreaterThan(20);
    }
  });

  it('finds the writes it looks for (the scanner itself)', () => {
    const found = writesIn(
      [
        'sql`UPDATE leasehold.jobs j SET x = 1`',
        'const s = `update  leasehold.jobs`',
        'SET state = 1',
        'db.update(jobs)',
        'db.insert(jobs)',
        'INSERT INTO leasehold.jobs (id)',
      ].join('\n'),
    );
    expect(found.map((f) => f.line).sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(writesIn('SELECT state FROM leasehold.jobs; UPDATE leasehold.jobs_view_x SET states = 1')).toEqual([]);
  });

  it("keeps transitions/ behind its face, and the guard-skipping claim the failure harness's alone", () => {
    const reached: string[] = [];
    for (const file of files) {
      for (const target of importsOf(file, sourceOf(file))) {
        if (!target.startsWith('db/queue/transitions/')) continue;
        const allowed = target.endsWith('/unguarded-claim.ts')
          ? file === 'workers/failpoints.ts'
          : file === 'db/queue/transitions.ts' || file.startsWith('db/queue/transitions/');
        if (!allowed) reached.push(`${file} imports ${target}`);
      }
    }
    expect(reached).toEqual([]);
    expect(importsOf('workers/failpoints.ts', sourceOf('workers/failpoints.ts'))).toContain(
      'db/queue/transitions/unguarded-claim.ts',
    );
  });

  it('lists the database functions that move jobs in the transition table', () => {
    const by = EDGES.map((e) => e.by).join('\n');
    const functions = [
      'leasehold.operator_retry',
      'leasehold.operator_cancel',
      // The support actions (drizzle/0029, db/queue/support-actions.ts).
      'leasehold.operator_run_now',
      'leasehold.operator_reschedule',
      'leasehold.operator_set_priority',
      'leasehold.operator_rerun',
      'leasehold.operator_purge_dead',
    ];
    for (const fn of functions) expect(by).toContain(fn);
    // leasehold.operator_set_paused writes leasehold.queues (and the audit log), never a job.
    expect(writesIn(sourceOf('db/queue/operator.ts'))).toEqual([]);
    expect(writesIn(sourceOf('db/queue/support-actions.ts'))).toEqual([]);
  });
});
