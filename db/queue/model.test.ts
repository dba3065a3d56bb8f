/**
 * Model-based test (fast-check): random sequences of enqueue, claim, heartbeat, complete, fail,
 * reap, retry, cancel, run now, priority and time passing, run against real PostgreSQL and compared after every
 * step with an in-memory model of docs/contract.md §2–§4. Stale leases stay in play, so late
 * settlements by old attempts are exercised all the time.
 *
 * A shrunk counterexample is reported with its seed and path; keep it as a regression by
 * adding the printed command list to REGRESSIONS below.
 */
import { sql } from 'drizzle-orm';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  cancelIfUnchanged,
  claim,
  completeIfLeaseHeld,
  deadIfKindUnrun,
  enqueue,
  failIfLeaseHeld,
  heartbeatIfLeaseHeld,
  reapExpiredLeases,
  retryIfTerminal,
  runNowIfUnchanged,
  setPriorityIfUnchanged,
  type ClaimedJob,
} from '.';
import { useTestDatabase } from '../../test/db.ts';
import { expireLease, getJob, makeDue, uniqueQueue } from '../../test/factories.ts';
import { run } from './executor.ts';
import { EDGES } from './transitions.ts';

const t = useTestDatabase();

type State = 'ready' | 'running' | 'done' | 'dead' | 'cancelled';
interface ModelJob {
  id: string;
  state: State;
  attempts: number;
  maxAttempts: number;
  token: string | null;
  expired: boolean;
  due: boolean;
}
interface Model {
  jobs: ModelJob[];
  leases: ClaimedJob[];
}
interface Real {
  queue: string;
}

const NEVER_DUE = { baseDelayMs: 3_600_000 }; // failed jobs wait an hour unless time "passes"

const holds = (job: ModelJob | undefined, lease: ClaimedJob) =>
  !!job && job.state === 'running' && job.token === lease.leaseToken && !job.expired;

function fail(message: string): never {
  throw new Error(message);
}

/**
 * The moves each command of this model can make a job take (from → to). It must equal the
 * edge table of transitions.ts, which the state diagram is generated from: a new move in the
 * queue needs a command here, and a command here may only make the queue's moves.
 */
const MODEL_MOVES: Record<string, readonly (readonly [State, State])[]> = {
  claim: [['ready', 'running']],
  complete: [['running', 'done']],
  fail: [
    ['running', 'ready'],
    ['running', 'dead'],
  ],
  reap: [
    ['running', 'ready'],
    ['running', 'dead'],
  ],
  retry: [
    ['dead', 'ready'],
    ['cancelled', 'ready'],
  ],
  cancel: [
    ['ready', 'cancelled'],
    ['running', 'cancelled'],
  ],
  unrunKind: [['ready', 'dead']],
  support: [['ready', 'ready']],
};
const move = (from: string, to: string) => `${from} → ${to}`;

/** Moves seen in the database between two comparisons (every one must be an edge of EDGES). */
const observedMoves = new Set<string>();
const lastSeen = new Map<string, State>();

async function compare(m: Model) {
  if (m.jobs.length === 0) return;
  const rows = await run<{ id: string; state: State; attempts: number; max_attempts: number }>(
    t.db,
    sql`SELECT id, state, attempts, max_attempts FROM leasehold.jobs WHERE id = ANY(${sql.param(m.jobs.map((j) => j.id))}::uuid[])`,
  );
  const byId = new Map(rows.map((r) => [r.id, r]));
  for (const job of m.jobs) {
    const real = byId.get(job.id) ?? fail(`job ${job.id} vanished`);
    const before = lastSeen.get(job.id);
    if (before && before !== real.state) observedMoves.add(move(before, real.state));
    lastSeen.set(job.id, real.state);
    if (real.state !== job.state || real.attempts !== job.attempts || real.max_attempts !== job.maxAttempts) {
      fail(
        `job ${job.id}: model ${job.state}/${job.attempts}/${job.maxAttempts}, database ${real.state}/${real.attempts}/${real.max_attempts}`,
      );
    }
  }
}

class Enqueue implements fc.AsyncCommand<Model, Real> {
  constructor(readonly maxAttempts: number) {}
  check = (m: Readonly<Model>) => m.jobs.length < 6;
  async run(m: Model, r: Real) {
    const { id } = await enqueue(t.db, { queue: r.queue, kind: 'model', maxAttempts: this.maxAttempts });
    m.jobs.push({
      id,
      state: 'ready',
      attempts: 0,
      maxAttempts: this.maxAttempts,
      token: null,
      expired: false,
      due: true,
    });
    await compare(m);
  }
  toString = () => `enqueue(max ${this.maxAttempts})`;
}

class Claim implements fc.AsyncCommand<Model, Real> {
  check = () => true;
  async run(m: Model, r: Real) {
    const [got] = await claim(t.db, { queues: [r.queue], workerId: 'model', limit: 1, leaseSeconds: 600 });
    const claimable = m.jobs.filter((j) => j.state === 'ready' && j.due);
    if (!got) {
      if (claimable.length > 0) fail(`claim found nothing, model expected one of ${claimable.length}`);
      return;
    }
    const job =
      claimable.find((j) => j.id === got.id) ?? fail(`claim returned ${got.id}, which the model says is not claimable`);
    Object.assign(job, { state: 'running', attempts: job.attempts + 1, token: got.leaseToken, expired: false });
    if (got.attempt !== job.attempts) fail(`attempt ${got.attempt}, model ${job.attempts}`);
    m.leases.push(got);
    await compare(m);
  }
  toString = () => 'claim';
}

/** Settlements pick any lease ever handed out, stale ones included. */
abstract class WithLease implements fc.AsyncCommand<Model, Real> {
  constructor(readonly pick: number) {}
  check = (m: Readonly<Model>) => m.leases.length > 0;
  lease(m: Model) {
    const lease = m.leases[this.pick % m.leases.length]!;
    return { lease, job: m.jobs.find((j) => j.id === lease.id) };
  }
  abstract run(m: Model, r: Real): Promise<void>;
}

class Complete extends WithLease {
  async run(m: Model) {
    const { lease, job } = this.lease(m);
    const expected = holds(job, lease);
    const outcome = await completeIfLeaseHeld(t.db, lease);
    if (outcome.applied !== expected) fail(`complete applied=${outcome.applied}, model ${expected}`);
    if (expected) Object.assign(job!, { state: 'done', token: null });
    await compare(m);
  }
  toString = () => `complete(lease ${this.pick})`;
}

class Fail extends WithLease {
  constructor(
    pick: number,
    readonly permanent: boolean,
  ) {
    super(pick);
  }
  async run(m: Model) {
    const { lease, job } = this.lease(m);
    const expected = holds(job, lease);
    const outcome = await failIfLeaseHeld(t.db, lease, {
      error: 'model',
      failureClass: this.permanent ? 'permanent' : 'transient',
      policy: NEVER_DUE,
    });
    if (outcome.applied !== expected) fail(`fail applied=${outcome.applied}, model ${expected}`);
    if (expected) {
      const retry = !this.permanent && job!.attempts < job!.maxAttempts;
      Object.assign(job!, { state: retry ? 'ready' : 'dead', token: null, due: false });
    }
    await compare(m);
  }
  toString = () => `fail(lease ${this.pick}, ${this.permanent ? 'permanent' : 'transient'})`;
}

class Heartbeat extends WithLease {
  async run(m: Model) {
    const { lease, job } = this.lease(m);
    const expected = holds(job, lease);
    const outcome = await heartbeatIfLeaseHeld(t.db, lease, { leaseSeconds: 600 });
    if (outcome.applied !== expected) fail(`heartbeat applied=${outcome.applied}, model ${expected}`);
    await compare(m);
  }
  toString = () => `heartbeat(lease ${this.pick})`;
}

/** Time passes for one job: its lease runs out, or its backoff ends. */
class TimePasses implements fc.AsyncCommand<Model, Real> {
  constructor(readonly pick: number) {}
  check = (m: Readonly<Model>) => m.jobs.length > 0;
  async run(m: Model) {
    const job = m.jobs[this.pick % m.jobs.length]!;
    if (job.state === 'running') {
      await expireLease(t.db, job.id);
      job.expired = true;
    } else if (job.state === 'ready') {
      await makeDue(t.db, job.id);
      job.due = true;
    }
    await compare(m);
  }
  toString = () => `timePasses(job ${this.pick})`;
}

class Reap implements fc.AsyncCommand<Model, Real> {
  check = () => true;
  async run(m: Model, r: Real) {
    const result = await reapExpiredLeases(t.db, { leaseExpiredDelayMs: 0, limit: 1000 });
    const mine = new Set(m.jobs.map((j) => j.id));
    const reaped = new Set([...result.retried, ...result.dead].filter((id) => mine.has(id)));
    for (const job of m.jobs.filter((j) => j.state === 'running' && j.expired)) {
      if (!reaped.has(job.id)) fail(`reap missed expired job ${job.id}`);
      const retry = job.attempts < job.maxAttempts;
      Object.assign(job, { state: retry ? 'ready' : 'dead', token: null, expired: false, due: true });
      reaped.delete(job.id);
    }
    if (reaped.size > 0) fail(`reap took jobs the model says hold a live lease: ${[...reaped].join(', ')}`);
    void r;
    await compare(m);
  }
  toString = () => 'reap';
}

/** The grace (0 here) has passed for kind `model`, which no live worker runs: due ready jobs die. */
class UnrunKind implements fc.AsyncCommand<Model, Real> {
  check = () => true;
  async run(m: Model) {
    const { dead } = await deadIfKindUnrun(t.db, { graceMs: 0, limit: 10_000 });
    const ended = new Set(dead);
    for (const job of m.jobs) {
      const expected = job.state === 'ready' && job.due;
      if (expected !== ended.has(job.id)) fail(`unrun kind: job ${job.id} ${expected ? 'not ended' : 'ended'}`);
      if (expected) Object.assign(job, { state: 'dead', token: null });
    }
    await compare(m);
  }
  toString = () => 'unrunKind';
}

class Retry implements fc.AsyncCommand<Model, Real> {
  constructor(readonly pick: number) {}
  check = (m: Readonly<Model>) => m.jobs.length > 0;
  async run(m: Model) {
    const job = m.jobs[this.pick % m.jobs.length]!;
    const expected = job.state === 'dead' || job.state === 'cancelled';
    const outcome = await retryIfTerminal(t.db, { id: job.id, actor: 'model' });
    if (outcome.applied !== expected) fail(`retry applied=${outcome.applied}, model ${expected} (${job.state})`);
    if (expected)
      Object.assign(job, { state: 'ready', maxAttempts: Math.max(job.maxAttempts, job.attempts + 1), due: true });
    await compare(m);
  }
  toString = () => `retry(job ${this.pick})`;
}

class Cancel implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly pick: number,
    readonly withLease: number | null,
  ) {}
  check = (m: Readonly<Model>) => m.jobs.length > 0;
  async run(m: Model) {
    const job = m.jobs[this.pick % m.jobs.length]!;
    const token =
      this.withLease === null || m.leases.length === 0 ? null : m.leases[this.withLease % m.leases.length]!.leaseToken;
    const expected =
      (job.state === 'ready' && token === null) || (job.state === 'running' && token !== null && token === job.token);
    const outcome = await cancelIfUnchanged(t.db, { id: job.id, leaseToken: token, actor: 'model' });
    if (outcome.applied !== expected) fail(`cancel applied=${outcome.applied}, model ${expected} (${job.state})`);
    if (expected) Object.assign(job, { state: 'cancelled', token: null, expired: false });
    await compare(m);
  }
  toString = () =>
    `cancel(job ${this.pick}, ${this.withLease === null ? 'no token' : `token of lease ${this.withLease}`})`;
}

/**
 * An operator's run now (a scheduled or retrying job) or priority change (a ready job), with
 * what the database shows as what the page saw: a ready job stays ready, now due for run now.
 */
class Support implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly pick: number,
    readonly runNow: boolean,
  ) {}
  check = (m: Readonly<Model>) => m.jobs.length > 0;
  async run(m: Model) {
    const job = m.jobs[this.pick % m.jobs.length]!;
    const real = await getJob(t.db, job.id);
    const seen = { state: real.state, attempts: real.attempts, updatedAt: real.updatedAt };
    const expected = job.state === 'ready' && (!this.runNow || job.attempts > 0 || !job.due);
    const outcome = this.runNow
      ? await runNowIfUnchanged(t.db, { id: job.id, seen, actor: 'model' })
      : await setPriorityIfUnchanged(t.db, { id: job.id, priority: job.attempts, seen, actor: 'model' });
    if (outcome.applied !== expected)
      fail(`${this.toString()} applied=${outcome.applied}, model ${expected} (${job.state})`);
    if (expected && this.runNow) job.due = true;
    await compare(m);
  }
  toString = () => `${this.runNow ? 'runNow' : 'setPriority'}(job ${this.pick})`;
}

const commands = [
  fc.integer({ min: 1, max: 3 }).map((n) => new Enqueue(n)),
  fc.constant(new Claim()),
  fc.nat().map((i) => new Complete(i)),
  fc.tuple(fc.nat(), fc.boolean()).map(([i, p]) => new Fail(i, p)),
  fc.nat().map((i) => new Heartbeat(i)),
  fc.nat().map((i) => new TimePasses(i)),
  fc.constant(new Reap()),
  fc.constant(new UnrunKind()),
  fc.nat().map((i) => new Retry(i)),
  fc.tuple(fc.nat(), fc.option(fc.nat(), { nil: null })).map(([i, l]) => new Cancel(i, l)),
  fc.tuple(fc.nat(), fc.boolean()).map(([i, now]) => new Support(i, now)),
];

describe('the queue against its model', () => {
  it('agrees with the contract model on random operation sequences, stale leases included', async () => {
    let steps = 0;
    let settlementsRefused = 0;
    await fc.assert(
      fc.asyncProperty(fc.commands(commands, { maxCommands: 60, size: 'max' }), async (cmds) => {
        const model: Model = { jobs: [], leases: [] };
        await fc.asyncModelRun(() => ({ model, real: { queue: uniqueQueue('model') } }), cmds);
        steps += [...cmds].length;
        settlementsRefused += model.leases.filter(
          (l) =>
            !holds(
              model.jobs.find((j) => j.id === l.id),
              l,
            ),
        ).length;
      }),
      { numRuns: Number(process.env.MODEL_RUNS ?? 40), verbose: 1 },
    );
    // The property really exercised the queue, stale leases included.
    expect(steps).toBeGreaterThan(200);
    expect(settlementsRefused).toBeGreaterThan(10);
    // Every move the database made is an edge of the state machine, and moves were seen.
    const edges = new Set(EDGES.filter((e) => e.from && e.to).map((e) => move(e.from!, e.to!)));
    expect(observedMoves.size).toBeGreaterThan(4);
    expect([...observedMoves].filter((m) => !edges.has(m))).toEqual([]);
  }, 300_000);

  it("makes exactly the moves of transitions.ts's edge table (the state diagram's source)", () => {
    // Failing into `cancelled` (class cancelled) and releasing are moves this model does not
    // drive: they are the same pairs as cancel's and fail's, covered by settle tests.
    const modelled = new Set(Object.values(MODEL_MOVES).flatMap((moves) => moves.map(([a, b]) => move(a, b))));
    const edges = new Set(EDGES.filter((e) => e.from && e.to).map((e) => move(e.from!, e.to!)));
    expect([...modelled].sort()).toEqual([...edges].sort());
  });
});
