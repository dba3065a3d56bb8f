/**
 * ready → running: the claim statements (db/queue/transitions.ts is the face; its header has
 * the invariants and the lock order). Only the transitions' own files import this one, and the
 * failure harness's guard-skipping claim (unguarded-claim.ts), which shares CLAIM_SET and
 * CLAIM_LEASE_ROWS so that it differs from the claim by its guard alone.
 */
import { CLAIM_COLUMNS, qualified } from '../job.ts';

/**
 * The claim ($1 the queue or queues, $2 the limit, $3 token, $4 lease seconds, $5 worker id;
 * by kind also $6 the kind or kinds and $7 the version or versions).
 *
 * Why the CTEs: the locking SELECT with its LIMIT must run before the writes and by itself;
 * a CTE that locks rows is materialised once, so it is a fence (as `IN (SELECT … LIMIT n)` the
 * planner may re-evaluate it and take more rows than asked for).
 *
 * The walk is over `ready_jobs` alone, so it reads O(limit) narrow entries however many jobs
 * wait or have finished; its rows are taken by address (`ctid = ANY(ARRAY(…))`, a TID scan:
 * they are locked by this statement, so their addresses hold). The jobs are then found by
 * primary key and updated only while `ready` and due: a ready row left by a cancel or a move is
 * deleted here and leases nothing. The UPDATE names no indexed column, so each job's new
 * version stays on its page (HOT) and writes no index entry. The lease rows (one per queue of
 * the batch) record the token, the jobs and the deadline for the reaper.
 *
 * Shapes: `kind` and `kinds` take only the kind versions given (a worker's handlers), walking
 * (kind, kind_version, queue, claim_at, id) one arm (queue, kind, version) at a time, so jobs
 * of other kinds are never read, however many wait ahead of them (db/queue/claim.test.ts,
 * "backlog"). `one` and `many` take any kind of their queues: the same walk, with an arm for
 * each queue and each kind version that has ready rows (PRESENT_VERSIONS), so every claim reads
 * the kind index alone (drizzle/0016). With several arms, a first pass without locks finds how
 * many of the `limit` first due jobs in the aging order each arm holds, and each arm then locks
 * only that many (skipping rows other claims hold, walking on past them): a claim locks no more
 * rows than it takes, where a LIMIT per arm would lock up to arms × limit (each lock a WAL
 * record).
 *
 * Why `claim_at <= now()` as well as `run_at <= now()`: priorities are never negative, so a due
 * job always has claim_at <= run_at <= now(). The bound ends the index walk there.
 *
 * `flush = false` (the worker's `--async-claims`): the statement sets synchronous_commit off
 * for its own transaction as an initplan of the UPDATE (docs/contract.md §4).
 *
 * `after` (the bounded texts, a claim loop's lower bound: db/queue/claim.ts, ClaimBound): each
 * walk, of a queue (`one`, `many`) or an arm (`kind`, `kinds`), starts strictly after a key
 * (claim_at, id) that the same claimer took before, as a row comparison the index's scan
 * starts from; `one` takes it as $6 and $7, `many` as arrays $6 and $7 (one element per queue
 * of $1), `kind` as $8 and $9, `kinds` as arrays $8 and $9 (one per arm). Why: while another
 * session holds an old snapshot, the entries of ready rows deleted since cannot be killed, and a
 * walk from the head visits every one of them (docs/performance.md, the held horizon). The
 * last key each walk took (the largest of its ready rows taken) comes back once, on the row of
 * its job (`claim_key`: claim_at as text, exact to the microsecond; NULL on the other rows), so
 * a claim of 500 converts one time, not 500, and the claimer compares nothing; a walk whose
 * last row's job was not claimed (a ready row left by a cancel) returns no key and keeps its
 * start. Without `after` the texts are the measured ones, byte for byte
 * (db/queue/statement-texts.test.ts).
 */
export type ClaimShape = 'one' | 'many' | 'kind' | 'kinds';

export function claimText(shape: ClaimShape, flush: boolean, after = false): string {
  return `
    WITH ${candidates(shape, after)},
    taken AS (
      DELETE FROM leasehold.ready_jobs r WHERE r.ctid = ANY(ARRAY(SELECT ctid FROM candidate)) RETURNING r.id${
        after ? TAKEN_KEY[shape] : ''
      }
    ),
    claimed AS (
      UPDATE leasehold.jobs j
      SET ${CLAIM_SET}
      WHERE j.id = ANY(ARRAY(SELECT id FROM taken)) AND j.state = 'ready' AND j.run_at <= statement_timestamp()${
        flush ? '' : `\n        AND (SELECT set_config('synchronous_commit', 'off', true)) = 'off'`
      }
      RETURNING ${qualified(CLAIM_COLUMNS, 'j')}
    ),${CLAIM_LEASE_ROWS}${after ? LAST_KEY[shape] : '\n    SELECT * FROM claimed'}`;
}

/** What the bounded texts' `taken` returns besides the id: the key, and the walk it came from. */
const TAKEN_KEY: Record<ClaimShape, string> = {
  one: ', r.claim_at',
  many: ', r.claim_at, r.queue',
  kind: ', r.claim_at',
  kinds: ', r.claim_at, r.queue, r.kind, r.kind_version',
};

/**
 * The bounded texts' end: each walk's last key taken, on its job's row (a hash join of at most
 * one row per walk). In the several-walk shapes the join also matches the walk to the job's
 * queue (kind, version): a ready row left behind by a move is in another walk than its job, and
 * its key must neither land on the job's walk nor put the job's row out twice.
 */
const lastKey = (walk: string[]) => `,
    last_key AS (
      SELECT ${walk.length ? `DISTINCT ON (${walk.map((c) => `t.${c}`).join(', ')}) ` : ''}t.id, ${walk.map((c) => `t.${c}, `).join('')}t.claim_at::text AS claim_key
      FROM taken t
      ORDER BY ${walk.map((c) => `t.${c}, `).join('')}t.claim_at DESC, t.id DESC${walk.length ? '' : '\n      LIMIT 1'}
    )
    SELECT c.*, k.claim_key FROM claimed c LEFT JOIN last_key k ON k.id = c.id${walk.map((c) => ` AND k.${c} = c.${c}`).join('')}`;

const LAST_KEY: Record<ClaimShape, string> = {
  one: lastKey([]),
  many: lastKey(['queue']),
  kind: lastKey([]),
  kinds: lastKey(['queue', 'kind', 'kind_version']),
};

/**
 * A bounded walk's start: strictly after the key given (an index condition, not a filter). In
 * the single-walk shapes the key is a scalar subquery of the parameter, a value the planner
 * cannot read: a custom plan would fold a plain $6 into a constant, and a key past the end of
 * the statistics' histogram (the last one taken is always among the newest) looks like one row
 * ahead, on which any index ties, one the walk must sort included (seen in db/queue/claim.test.ts:
 * the any-kind claim walked the kind index, every row past the bound, and sorted them). Seen as
 * unknown, it is what `claim_at <= statement_timestamp()` already is, and the walk that keeps
 * the claim order and stops at the limit wins, as in the unbounded texts.
 */
const startAfter = (at: string, id: string) => `\n        AND (r.claim_at, r.id) > (${at}, ${id})`;

/**
 * What a claim sets on each job it leases ($3 token, $4 lease seconds, $5 worker id). Exported
 * with CLAIM_LEASE_ROWS for the failure harness's guard-skipping claim alone
 * (transitions/unguarded-claim.ts), which must differ from this one by its guard alone; a test
 * (test/state-writes.test.ts) keeps every other file from splicing them.
 */
export const CLAIM_SET = `state = 'running',
          attempts = j.attempts + 1,
          lease_token = $3::uuid,
          lease_until = statement_timestamp() + make_interval(secs => $4::float8),
          worker_id = $5::text,
          started_at = statement_timestamp(),
          updated_at = statement_timestamp()`;

/** The claim's lease rows: one per queue of the jobs in CTE `claimed` (a CTE named `lease`). */
export const CLAIM_LEASE_ROWS = `
    lease AS (
      INSERT INTO leasehold.leases (token, queue, worker_id, lease_until, running, job_ids)
      SELECT $3::uuid, c.queue, $5::text, min(c.lease_until), count(*)::int, array_agg(c.id)
      FROM claimed c GROUP BY c.queue
      RETURNING 1
    )`;

/** A limit row `m`'s rate in force: its max starts (NULL: no rate), and its interval as an SQL interval. */
export const limitRate = (m: string) => ({
  max: `CASE WHEN ${m}.set_rate IS NOT NULL THEN ${m}.set_rate ELSE ${m}.declared_rate END`,
  per: `make_interval(secs => (CASE WHEN ${m}.set_rate IS NOT NULL THEN ${m}.set_per_ms ELSE ${m}.declared_per_ms END) / 1000.0)`,
});

/** A limit's starts in its rate's window now (`key` and `per`: SQL texts). */
export const limitStarted = (key: string, per: string) =>
  `(SELECT coalesce(sum(s.n), 0) FROM leasehold.limit_starts s
                               WHERE s.limit_key = ${key} AND s.at > statement_timestamp() - ${per})`;

/** A limit's running attempts: the `running` of the lease rows its limit_claims rows name (`key`: an SQL text). */
export const limitRunning = (key: string) =>
  `(SELECT coalesce(sum(l.running), 0) FROM leasehold.limit_claims x
           JOIN leasehold.leases l ON l.token = x.token AND l.queue = x.queue WHERE x.limit_key = ${key})`;

/**
 * A limited claim's text (db/queue/limits.ts; claim() with `limits`): `text`, one of the texts
 * above, with its limit ($2) capped by what the limits named in `$keysParam` (text[]) leave, and
 * a row of limit_claims per limit and lease row of its own, so the next claim counts these jobs.
 * What a limit leaves: nothing while it is paused (`paused_until` ahead); else the least of its
 * maximum (`set_max`, else `declared_max`) less its running attempts (limitRunning) and its rate
 * (`set_rate` per `set_per_ms`, else the declared pair) less its starts in the last interval
 * (limit_starts), never below 0; a key without a row or any of these leaves the limit as it is.
 * A claim that took jobs writes one limit_starts row per rate-limited key (`n` at its statement
 * time, each job's `started_at`), and removes that key's rows older than its interval. It also
 * removes the limits' limit_claims rows whose lease row runs nothing any more (its count only
 * ever goes down) or is gone, so a count reads about one row per claim still running, not every
 * claim of the last lease period. The caller has locked the limits' rows before this statement,
 * whose snapshot then sees every claim of them that committed first (limits.ts, lockLimits).
 */
export function limitedClaimText(text: string, keysParam: number): string {
  const keys = `$${keysParam}::text[]`;
  const { max: rateMax, per: ratePer } = limitRate('m');
  const left = `least($2::int, coalesce((
        SELECT min(CASE WHEN m.paused_until > statement_timestamp() THEN 0 ELSE greatest(least(
                 coalesce(m.set_max, m.declared_max) - ${limitRunning('m.key')},
                 ${rateMax} - ${limitStarted('m.key', ratePer)}), 0) END)::int
        FROM leasehold.limits m
        WHERE m.key = ANY(${keys})
          AND (coalesce(m.set_max, m.declared_max, ${rateMax}) IS NOT NULL OR m.paused_until > statement_timestamp())), $2::int))`;
  const limitRows = `${CLAIM_LEASE_ROWS},
    limit_claimed AS (
      INSERT INTO leasehold.limit_claims (limit_key, token, queue)
      SELECT k.key, $3::uuid, c.queue FROM (SELECT DISTINCT queue FROM claimed) c CROSS JOIN unnest(${keys}) AS k(key)
      RETURNING 1
    ),
    limit_pruned AS (
      DELETE FROM leasehold.limit_claims x
      WHERE x.limit_key = ANY(${keys})
        AND NOT EXISTS (SELECT 1 FROM leasehold.leases l WHERE l.token = x.token AND l.queue = x.queue AND l.running > 0)
      RETURNING 1
    ),
    limit_started AS (
      INSERT INTO leasehold.limit_starts AS s (limit_key, at, n)
      SELECT m.key, statement_timestamp(), (SELECT count(*) FROM claimed)::int
      FROM leasehold.limits m
      WHERE m.key = ANY(${keys}) AND ${rateMax} IS NOT NULL AND EXISTS (SELECT 1 FROM claimed)
      ON CONFLICT (limit_key, at) DO UPDATE SET n = s.n + excluded.n
      RETURNING 1
    ),
    limit_aged AS (
      DELETE FROM leasehold.limit_starts s USING leasehold.limits m
      WHERE m.key = ANY(${keys}) AND s.limit_key = m.key AND ${rateMax} IS NOT NULL
        AND s.at <= statement_timestamp() - ${ratePer}
      RETURNING 1
    )`;
  if (!text.includes('LIMIT $2::int') || !text.includes(CLAIM_LEASE_ROWS)) {
    throw new Error('Leasehold: limitedClaimText was given a text that is not a claim');
  }
  return text.replaceAll('LIMIT $2::int', `LIMIT ${left}`).replace(CLAIM_LEASE_ROWS, limitRows);
}

const DUE = 'r.claim_at <= statement_timestamp() AND r.run_at <= statement_timestamp()';

/**
 * The kind versions that have ready rows, in any queue: a loose walk of the kind index from its
 * end, one probe per kind version (the last entry before the previous version found). The
 * any-kind claim walks each of them as an arm, so no statement reads `ready_jobs_claim_idx`,
 * which a contracting migration drops (drizzle/contracting/). Why from the end: a probe reads
 * entries until the first one its snapshot sees, and while another session holds an old
 * snapshot the entries of rows claimed since stay; claims take each version's oldest rows, so
 * its newest entries are seen at once while a backlog waits. A kind version drained since the
 * horizon was taken is read through (docs/performance.md, the held horizon).
 */
const PRESENT_VERSIONS = `
      present AS (
        WITH RECURSIVE walk(kind, version) AS (
          (SELECT r.kind, r.kind_version FROM leasehold.ready_jobs r
           WHERE r.kind_version IS NOT NULL
           ORDER BY r.kind DESC, r.kind_version DESC LIMIT 1)
          UNION ALL
          SELECT n.kind, n.kind_version FROM walk w
          CROSS JOIN LATERAL (
            SELECT r.kind, r.kind_version FROM leasehold.ready_jobs r
            WHERE (r.kind, r.kind_version) < (w.kind, w.version)
            ORDER BY r.kind DESC, r.kind_version DESC LIMIT 1
          ) n
        )
        SELECT kind, version FROM walk
      ),`;

// Any kind: the queue ($1) or queues ($1[]), each crossed with the kind versions present, as
// the arms of the kind shapes; bounded, each arm of a queue starts after that queue's key.
const anyKindArms = (many: boolean, bounded: boolean) => `${PRESENT_VERSIONS}
      arm AS (
        SELECT row_number() OVER (ORDER BY w.o, p.kind, p.version) AS i, w.queue, p.kind, p.version${
          bounded ? ', w.after_at, w.after_id' : ''
        }
        FROM ${
          many
            ? bounded
              ? 'unnest($1::text[], $6::timestamptz[], $7::uuid[]) WITH ORDINALITY AS w(queue, after_at, after_id, o)'
              : 'unnest($1::text[]) WITH ORDINALITY AS w(queue, o)'
            : bounded
              ? '(SELECT $1::text AS queue, (SELECT $6::timestamptz) AS after_at, (SELECT $7::uuid) AS after_id, 1 AS o) w'
              : '(SELECT $1::text AS queue, 1 AS o) w'
        }
        CROSS JOIN present p
        WHERE NOT EXISTS (SELECT 1 FROM leasehold.queues q WHERE q.name = w.queue AND q.paused)
      ),`;

// One queue, one kind version ($6, $7): a single walk of the kind index.
const oneKind = (bounded: boolean) => `
      SELECT r.ctid
      FROM leasehold.ready_jobs r
      WHERE r.kind = $6::text AND r.kind_version = $7::int AND r.queue = $1::text
        AND ${DUE}${bounded ? startAfter('(SELECT $8::timestamptz)', '(SELECT $9::uuid)') : ''}
        AND NOT EXISTS (SELECT 1 FROM leasehold.queues q WHERE q.name = $1::text AND q.paused)
      ORDER BY r.claim_at, r.id
      LIMIT $2::int
      FOR UPDATE SKIP LOCKED`;

// The arms given (queue $1[i], kind $6[i], version $7[i]).
const kindArms = (bounded: boolean) => `
      arm AS (
        ${
          bounded
            ? `SELECT a.i, a.queue, a.kind, a.version, a.after_at, a.after_id
        FROM unnest($1::text[], $6::text[], $7::int[], $8::timestamptz[], $9::uuid[]) WITH ORDINALITY AS a(queue, kind, version, after_at, after_id, i)`
            : `SELECT a.i, a.queue, a.kind, a.version
        FROM unnest($1::text[], $6::text[], $7::int[]) WITH ORDINALITY AS a(queue, kind, version, i)`
        }
        WHERE NOT EXISTS (SELECT 1 FROM leasehold.queues q WHERE q.name = a.queue AND q.paused)
      ),`;

// After the arms: `share` counts, without locking, how many of the first $2 due jobs in the
// aging order each arm holds; `candidate` locks that many per arm.
const armWalks = (bounded: boolean) => `
      share AS (
        SELECT f.i, count(*)::int AS n
        FROM (
          SELECT arm.i, p.claim_at, p.id FROM arm
          CROSS JOIN LATERAL (
            SELECT r.claim_at, r.id
            FROM leasehold.ready_jobs r
            WHERE r.kind = arm.kind AND r.kind_version = arm.version AND r.queue = arm.queue
              AND ${DUE}${armAfter(bounded, '      ')}
            ORDER BY r.claim_at, r.id
            LIMIT $2::int
          ) p
          ORDER BY p.claim_at, p.id
          LIMIT $2::int
        ) f
        GROUP BY f.i
      ),
      candidate AS (
        SELECT c.ctid FROM share s JOIN arm ON arm.i = s.i
        CROSS JOIN LATERAL (
          SELECT r.ctid
          FROM leasehold.ready_jobs r
          WHERE r.kind = arm.kind AND r.kind_version = arm.version AND r.queue = arm.queue
            AND ${DUE}${armAfter(bounded, '    ')}
          ORDER BY r.claim_at, r.id
          LIMIT s.n
          FOR UPDATE SKIP LOCKED
        ) c
      )`;

const armAfter = (bounded: boolean, indent: string) =>
  bounded ? startAfter('arm.after_at', 'arm.after_id').replaceAll('\n', `\n${indent}`) : '';

/** The CTEs up to and including `candidate` (the rows to take), by shape, bounded or not. */
function candidates(shape: ClaimShape, bounded: boolean): string {
  switch (shape) {
    case 'one':
      return `${anyKindArms(false, bounded)}${armWalks(bounded)}`.trim();
    case 'many':
      return `${anyKindArms(true, bounded)}${armWalks(bounded)}`.trim();
    case 'kind':
      return `candidate AS (${oneKind(bounded)})`;
    case 'kinds':
      return `${kindArms(bounded)}${armWalks(bounded)}`.trim();
  }
}

/**
 * The claim of one named job, for the testing entry's `runJob` (testing/claim-job.ts): the
 * claim above with one difference, the candidate: the job's own ready row (found by the job's
 * kind version, queue and claim key: the kind index; a grouped job's in grouped_ready_jobs, by
 * its group too, out of its group's turn) instead of a walk of the queue. The rest is the
 * claim's: the same guards (the ready row locked FOR UPDATE SKIP LOCKED and deleted, the job
 * updated only while `ready` and due, nothing from a paused queue), the same SET and the same
 * lease row, so settlement, heartbeats and the reaper see an ordinary attempt. An edge of
 * EDGES like the claim (ready → running); the model test's claim is the library's.
 *
 * $1 the job id, $2 the limit (1), $3 token, $4 lease seconds, $5 worker id (CLAIM_SET's).
 */
export const CLAIM_JOB = `
    WITH candidate AS (
      SELECT r.ctid
      FROM leasehold.jobs t
      JOIN leasehold.ready_jobs r
        ON r.kind = t.kind AND r.kind_version = t.kind_version AND r.queue = t.queue AND r.claim_at = t.claim_at AND r.id = t.id
      WHERE t.id = $1::uuid
        AND ${DUE}
        AND NOT EXISTS (SELECT 1 FROM leasehold.queues q WHERE q.name = r.queue AND q.paused)
      LIMIT $2::int
      FOR UPDATE OF r SKIP LOCKED
    ),
    grouped_candidate AS (
      SELECT r.ctid
      FROM leasehold.jobs t
      JOIN leasehold.grouped_ready_jobs r
        ON r.queue = t.queue AND r.kind = t.kind AND r.kind_version = t.kind_version AND r.group_key = t.group_key
           AND r.claim_at = t.claim_at AND r.id = t.id
      WHERE t.id = $1::uuid
        AND ${DUE}
        AND NOT EXISTS (SELECT 1 FROM leasehold.queues q WHERE q.name = r.queue AND q.paused)
      LIMIT $2::int
      FOR UPDATE OF r SKIP LOCKED
    ),
    taken AS (
      DELETE FROM leasehold.ready_jobs r WHERE r.ctid = ANY(ARRAY(SELECT ctid FROM candidate)) RETURNING r.id
    ),
    grouped_taken AS (
      DELETE FROM leasehold.grouped_ready_jobs r WHERE r.ctid = ANY(ARRAY(SELECT ctid FROM grouped_candidate)) RETURNING r.id
    ),
    claimed AS (
      UPDATE leasehold.jobs j
      SET ${CLAIM_SET}
      WHERE j.id = ANY(ARRAY(SELECT id FROM taken UNION ALL SELECT id FROM grouped_taken))
        AND j.state = 'ready' AND j.run_at <= statement_timestamp()
      RETURNING ${qualified(CLAIM_COLUMNS, 'j')}, j.group_key
    ),${CLAIM_LEASE_ROWS}
    SELECT * FROM claimed`;
