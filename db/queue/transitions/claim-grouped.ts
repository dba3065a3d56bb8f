/**
 * ready → running for grouped jobs: the grouped claim (db/queue/transitions.ts is the face; its
 * header has the invariants and the lock order; docs/flow-control.md, "Fair groups", the policy).
 *
 * A grouped job's ready row is in `grouped_ready_jobs`, never in `ready_jobs`, so the ungrouped
 * claim (transitions/claim.ts) never reads it. This claim gives the groups of each arm (queue,
 * kind, version) turns through `ready_groups`:
 *
 * 1. `turn`: the groups whose turn has come (`turn_at <= now`), least recently served first,
 *    `limit` + 16 of them (an index descent per arm, `ready_groups_turn_idx`), read without
 *    locks; `chosen`: the first `limit` of those with a job due (an index probe each). Two
 *    claims at once may serve one group: its ready rows are what they share out (SKIP LOCKED),
 *    so a one-group flood drains as fast as an ungrouped queue on every worker.
 * 2. `picked`: from each group in turn, its first `ceil(limit / groups)` due jobs in the aging
 *    order (one descent of `grouped_ready_jobs_claim_idx` each), locked FOR UPDATE SKIP LOCKED;
 *    `candidate` keeps the first `limit` of them by round (each group's first job, then each
 *    group's second, …) and then by turn. So one claim reads at most `limit` + 16 group rows
 *    and fewer than 2 × `limit` + 16 ready rows, however many groups or jobs wait.
 * 3. The jobs are taken as the ungrouped claim takes them (the same SET, guard and lease rows).
 * 4. `served`: each chosen group goes behind every group waiting (`turn_at` = now); a looked-at
 *    group with nothing due: its turn moves to its next job's sort key (never
 *    earlier than now) and it is marked idle, for the maintenance sweep (db/queue/groups.ts,
 *    sweepReadyGroups) to delete its row once it has no job, or to bring its turn back if a job came
 *    while this claim ran. The rows are locked FOR NO KEY UPDATE SKIP LOCKED (`moved`): a row
 *    another claim is moving is left to it (it moves it anyway), so no claim waits on another,
 *    and an enqueue's FOR KEY SHARE on the row neither waits for this nor holds it up.
 *
 * $1 the queues of the arms (one per arm), $2 the limit, $3 token, $4 lease seconds, $5 worker
 * id, $6 the kinds, $7 the versions (in step with $1). Without kinds (`any`, tests and tools),
 * $1 is the queues, and the arms are every (kind, version) with a group row in them.
 */
import { CLAIM_COLUMNS, qualified } from '../job.ts';
import { CLAIM_LEASE_ROWS, CLAIM_SET } from './claim.ts';

const NOW = 'statement_timestamp()';
/**
 * Group rows a claim looks at: its limit, and some more, so that groups with nothing due at the
 * head of the turns (emptied since, or holding only later jobs) neither make a claim come back
 * empty nor wait for the next one: each is moved on as it is looked at.
 */
const EXAMINED = '$2::int + 16';
const GROUP_MATCH = (r: string, g: string) =>
  `${r}.queue = ${g}.queue AND ${r}.kind = ${g}.kind AND ${r}.kind_version = ${g}.kind_version AND ${r}.group_key = ${g}.group_key`;

/**
 * The queues whose group limits the claim locked, in the limited texts: $8 with the worker's
 * arms, $6 without (the parameter after the shape's own).
 */
export const LOCKED_PARAM = { given: 8, any: 6 } as const;

/**
 * A queue whose group limits this claim may use (`q`: its name's SQL): one without group limits,
 * or, in the limited texts, one whose '' row the claim locked ($locked). A queue whose first
 * limit came after the lock's look is left out, as the plain text leaves out every limited
 * queue: its grouped jobs wait for the next claim, which locks it.
 */
const USABLE = (q: string, locked: number | null) =>
  `\n          AND ${locked === null ? '' : `(${q} = ANY($${locked}::text[]) OR `}NOT EXISTS (SELECT 1 FROM leasehold.group_limits d WHERE d.queue = ${q} AND d.group_key = '')${locked === null ? '' : ')'}`;

const ARMS = {
  given: (locked: number | null) => `
      arm AS (
        SELECT a.queue, a.kind, a.version
        FROM unnest($1::text[], $6::text[], $7::int[]) AS a(queue, kind, version)
        WHERE NOT EXISTS (SELECT 1 FROM leasehold.queues q WHERE q.name = a.queue AND q.paused)${USABLE('a.queue', locked)}
      ),`,
  any: (locked: number | null) => `
      arm AS (
        SELECT DISTINCT g.queue, g.kind, g.kind_version AS version
        FROM leasehold.ready_groups g
        WHERE g.queue = ANY($1::text[])
          AND NOT EXISTS (SELECT 1 FROM leasehold.queues q WHERE q.name = g.queue AND q.paused)${USABLE('g.queue', locked)}
      ),`,
};

/**
 * A looked-at group's room under its queue's group limits (`t` its turn row): NULL without a
 * maximum (no '' row for its queue, or neither the group's nor the default maximum), 0 while the
 * group is paused, else its maximum less its running attempts (the jobs of its group_claims rows
 * still running under their claim's token), never below 0.
 */
const GROUP_LEFT = `(
                 SELECT CASE WHEN o.paused THEN 0
                             WHEN coalesce(o.max, d.max) IS NULL THEN NULL
                             ELSE greatest(coalesce(o.max, d.max) - (
                               SELECT count(*) FROM leasehold.group_claims x
                               CROSS JOIN LATERAL unnest(x.job_ids) AS u(id)
                               JOIN leasehold.jobs j ON j.id = u.id AND j.lease_token = x.token AND j.state = 'running'
                               WHERE x.queue = t.queue AND x.group_key = t.group_key), 0)::int END
                 FROM leasehold.group_limits d
                 LEFT JOIN leasehold.group_limits o ON o.queue = d.queue AND o.group_key = t.group_key
                 WHERE d.queue = t.queue AND d.group_key = ''
               )`;

/**
 * The grouped claim's text: with the worker's arms (`given`) or every arm of the queues (`any`).
 * Without `limited`, the arms of queues with group limits are left out: such a queue's jobs are
 * taken only by the limited text, after its lock (so a claimer that has not yet seen a queue's
 * first limit takes nothing of it). `limited` (a queue of the claim has group limits; its caller
 * locked their '' rows first, db/queue/claim.ts): each group looked at gets its room (GROUP_LEFT); a group without room (at
 * its maximum, or paused) is not chosen and goes behind the groups waiting as if served; a
 * chosen group gives no more than its room, counted over every kind version of the claim
 * (`candidate`); the jobs taken are recorded per group in group_claims, and the rows of the groups
 * looked at whose jobs all ended are deleted. Its parameters end with the queues locked
 * (LOCKED_PARAM).
 */
export function groupedClaimText(arms: keyof typeof ARMS, flush: boolean, limited = false): string {
  return `
    WITH ${ARMS[arms](limited ? LOCKED_PARAM[arms] : null).trim()}
      turn AS (
        SELECT t.* FROM (
          SELECT g.queue, g.kind, g.kind_version, g.group_key, g.turn_at
          FROM arm CROSS JOIN LATERAL (
            SELECT g.queue, g.kind, g.kind_version, g.group_key, g.turn_at
            FROM leasehold.ready_groups g
            WHERE g.queue = arm.queue AND g.kind = arm.kind AND g.kind_version = arm.version AND g.turn_at <= ${NOW}
            ORDER BY g.turn_at, g.group_key
            LIMIT ${EXAMINED}
          ) g
        ) t
        ORDER BY t.turn_at, t.group_key
        LIMIT ${EXAMINED}
      ),
      looked AS (
        SELECT t.*, EXISTS (
                 SELECT 1 FROM leasehold.grouped_ready_jobs r
                 WHERE ${GROUP_MATCH('r', 't')} AND r.claim_at <= ${NOW} AND r.run_at <= ${NOW}
               ) AS due${limited ? `, ${GROUP_LEFT} AS room` : ''}
        FROM turn t
      ),
      chosen AS (
        SELECT * FROM looked WHERE due${limited ? ' AND coalesce(room, 1) > 0' : ''} ORDER BY turn_at, group_key LIMIT $2::int
      ),
      quota AS (
        SELECT ceil($2::numeric / greatest(count(*), 1))::int AS n FROM chosen
      ),
      picked AS (
        SELECT p.ctid, p.round, t.turn_at, t.group_key${limited ? ', t.queue, t.room' : ''}
        FROM chosen t CROSS JOIN quota
        CROSS JOIN LATERAL (
          SELECT x.ctid, row_number() OVER (ORDER BY x.claim_at, x.id) AS round
          FROM (
            SELECT r.ctid, r.claim_at, r.id
            FROM leasehold.grouped_ready_jobs r
            WHERE ${GROUP_MATCH('r', 't')}
              AND r.claim_at <= ${NOW} AND r.run_at <= ${NOW}
            ORDER BY r.claim_at, r.id
            LIMIT ${limited ? 'least(quota.n, coalesce(t.room, quota.n))' : 'quota.n'}
            FOR UPDATE SKIP LOCKED
          ) x
        ) p
      ),
      candidate AS (${
        limited
          ? `
        SELECT p.ctid FROM (
          SELECT p.*, row_number() OVER (PARTITION BY p.queue, p.group_key ORDER BY p.round, p.turn_at, p.ctid) AS nth
          FROM picked p
        ) p
        WHERE p.room IS NULL OR p.nth <= p.room
        ORDER BY p.round, p.turn_at, p.group_key LIMIT $2::int`
          : `
        SELECT ctid FROM picked ORDER BY round, turn_at, group_key LIMIT $2::int`
      }
      ),
    taken AS (
      DELETE FROM leasehold.grouped_ready_jobs r WHERE r.ctid = ANY(ARRAY(SELECT ctid FROM candidate))
      RETURNING r.id, r.queue, r.kind, r.kind_version, r.group_key
    ),
    claimed AS (
      UPDATE leasehold.jobs j
      SET ${CLAIM_SET}
      WHERE j.id = ANY(ARRAY(SELECT id FROM taken)) AND j.state = 'ready' AND j.run_at <= ${NOW}${
        flush ? '' : `\n        AND (SELECT set_config('synchronous_commit', 'off', true)) = 'off'`
      }
      RETURNING ${qualified(CLAIM_COLUMNS, 'j')}, j.group_key
    ),${CLAIM_LEASE_ROWS},
    moved AS (
      SELECT g.ctid, l.due,
             -- Read only for a group with nothing due: a served group's turn is now.
             CASE WHEN NOT l.due THEN (SELECT r.claim_at FROM leasehold.grouped_ready_jobs r WHERE ${GROUP_MATCH('r', 'l')}
                                       ORDER BY r.claim_at, r.id LIMIT 1) END AS next_at
      FROM looked l JOIN leasehold.ready_groups g ON ${GROUP_MATCH('g', 'l')}
      WHERE NOT l.due${limited ? ' OR l.room = 0' : ''} OR (l.queue, l.kind, l.kind_version, l.group_key) IN
            (SELECT c.queue, c.kind, c.kind_version, c.group_key FROM chosen c)
      FOR NO KEY UPDATE OF g SKIP LOCKED
    ),
    served AS (
      UPDATE leasehold.ready_groups g
      SET turn_at = CASE WHEN m.due THEN ${NOW} ELSE greatest(${NOW}, coalesce(m.next_at, ${NOW})) END,
          idle_since = CASE WHEN m.due THEN NULL ELSE ${NOW} END
      FROM moved m
      WHERE g.ctid = m.ctid
      RETURNING 1
    )${limited ? GROUP_CLAIM_ROWS : ''}
    SELECT * FROM claimed`;
}

/** A limited grouped claim's bookkeeping: its jobs per group, and the ended rows of the groups looked at. */
const GROUP_CLAIM_ROWS = `,
    group_claimed AS (
      INSERT INTO leasehold.group_claims (queue, group_key, token, job_ids)
      SELECT c.queue, c.group_key, $3::uuid, array_agg(c.id) FROM claimed c
      WHERE EXISTS (SELECT 1 FROM leasehold.group_limits d WHERE d.queue = c.queue AND d.group_key = '')
      GROUP BY c.queue, c.group_key
      RETURNING 1
    ),
    group_pruned AS (
      DELETE FROM leasehold.group_claims x
      WHERE (x.queue, x.group_key) IN (SELECT l.queue, l.group_key FROM looked l)
        AND NOT EXISTS (SELECT 1 FROM unnest(x.job_ids) AS u(id) JOIN leasehold.jobs j ON j.id = u.id
                        WHERE j.lease_token = x.token AND j.state = 'running')
      RETURNING 1
    )`;
