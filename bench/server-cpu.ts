/**
 * The database server's own CPU time, read from its processes (Linux /proc), so a benchmark can
 * say what a job cost PostgreSQL rather than "the machine minus the workers", which swings with
 * whatever else runs.
 *
 * A sample reads, for the postmaster and each process pg_stat_activity lists (client backends,
 * autovacuum launcher and workers, checkpointer, background writer, WAL writer, …), user +
 * system time from /proc/<pid>/stat. A process that exits between two samples is not lost: the
 * postmaster reaps it, so its whole CPU time moves into the postmaster's cutime + cstime. What
 * those grew by, less what the vanished processes had at the first sample, is the CPU of
 * processes that ended meanwhile (short-lived autovacuum workers, closed connections); it is
 * reported apart as `exited`, and attributed by the type last seen for them when the sampler
 * ran often enough to see them (`watch`).
 *
 * Needs the server on this machine and its /proc readable (the bench's embedded server, or a
 * local one run by another user when this process is root). `readable()` says whether it is.
 */
import { readFileSync } from 'node:fs';
import type pg from 'pg';

/** Clock ticks per second of /proc/<pid>/stat's times: 100 on every Linux this runs on. */
const TICKS_PER_SECOND = 100;
const MICROS_PER_TICK = 1_000_000 / TICKS_PER_SECOND;

/** What a process is, by pg_stat_activity's backend_type, folded into the groups reported. */
export type ServerCpuGroup = 'backends' | 'autovacuum' | 'background' | 'exited';
export const SERVER_CPU_GROUPS: readonly ServerCpuGroup[] = ['backends', 'autovacuum', 'background', 'exited'];
export const SERVER_CPU_GROUP_TEXT: Record<ServerCpuGroup, string> = {
  backends: 'client backends (the statements the queue sends)',
  autovacuum: 'autovacuum launcher and workers',
  background: 'checkpointer, background and WAL writers, the postmaster',
  exited: 'processes that ended between samples without being seen (short autovacuum workers, closed connections)',
};

function groupOf(backendType: string): Exclude<ServerCpuGroup, 'exited'> {
  if (backendType === 'client backend') return 'backends';
  if (backendType.startsWith('autovacuum')) return 'autovacuum';
  return 'background';
}

interface ProcTimes {
  /** utime + stime, µs. */
  own: number;
  /** cutime + cstime (reaped children), µs. */
  children: number;
}

function procTimes(pid: number): ProcTimes | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null; // exited
  }
  // The command name (field 2) is in parentheses and may hold spaces: split after it.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  // fields[0] is field 3 (state): utime is field 14, stime 15, cutime 16, cstime 17.
  const at = (field: number) => Number(fields[field - 3]);
  return { own: (at(14) + at(15)) * MICROS_PER_TICK, children: (at(16) + at(17)) * MICROS_PER_TICK };
}

function parentOf(pid: number): number | null {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(text.slice(text.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return null;
  }
}

export interface ServerCpuSample {
  postmaster: number;
  postmasterTimes: ProcTimes;
  /** CPU so far and group, by pid. */
  processes: Map<number, { cpu: number; group: Exclude<ServerCpuGroup, 'exited'> }>;
}

/** The postmaster's pid: the parent of this connection's backend (null when /proc cannot show it). */
export async function postmasterPid(client: pg.Client): Promise<number | null> {
  const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
  return parentOf(rows[0]!.pid);
}

/** Whether this process can read the server's CPU times (same machine, /proc readable). */
export async function readable(client: pg.Client): Promise<boolean> {
  const pid = await postmasterPid(client);
  return pid !== null && procTimes(pid) !== null;
}

/** Samples every process of the server but the sampler's own backend (its cost is the measurement's). */
export async function sampleServerCpu(client: pg.Client, postmaster: number): Promise<ServerCpuSample> {
  const { rows } = await client.query<{ pid: number; backend_type: string | null }>(
    'SELECT pid, backend_type FROM pg_catalog.pg_stat_activity WHERE pid <> pg_backend_pid()',
  );
  const processes: ServerCpuSample['processes'] = new Map();
  for (const row of rows) {
    const times = procTimes(row.pid);
    if (times) processes.set(row.pid, { cpu: times.own, group: groupOf(row.backend_type ?? '') });
  }
  const postmasterTimes = procTimes(postmaster);
  if (!postmasterTimes) throw new Error(`server CPU: the postmaster (pid ${postmaster}) is gone`);
  return { postmaster, postmasterTimes, processes };
}

/**
 * Follows a run: samples every `everyMs` so that short-lived processes (autovacuum workers)
 * are seen with their type; `stop()` takes the last sample and returns the CPU spent by group
 * since `start`, µs.
 */
export function watchServerCpu(client: pg.Client, postmaster: number, everyMs = 250) {
  const seen = new Map<number, { first: number; last: number; group: Exclude<ServerCpuGroup, 'exited'> }>();
  let first: ServerCpuSample | null = null;
  let timer: NodeJS.Timeout | null = null;
  let pending: Promise<void> = Promise.resolve();
  // A process in the first sample counts from what it had then; one that began later, from 0.
  const record = (sample: ServerCpuSample, atStart: boolean) => {
    for (const [pid, { cpu, group }] of sample.processes) {
      const known = seen.get(pid);
      if (known) known.last = cpu;
      else seen.set(pid, { first: atStart ? cpu : 0, last: cpu, group });
    }
  };
  const tick = () => {
    pending = pending.then(async () => record(await sampleServerCpu(client, postmaster), false)).catch(() => {});
  };
  return {
    async start(): Promise<void> {
      first = await sampleServerCpu(client, postmaster);
      record(first, true);
      timer = setInterval(tick, everyMs);
    },
    async stop(): Promise<ServerCpuSpent> {
      if (timer) clearInterval(timer);
      await pending;
      if (!first) throw new Error('server CPU: stop() before start()');
      const last = await sampleServerCpu(client, postmaster);
      record(last, false);
      const spent: Record<ServerCpuGroup, number> = { backends: 0, autovacuum: 0, background: 0, exited: 0 };
      // Processes alive at the end: what they spent since the first sample (or since they began).
      for (const [pid, entry] of seen) {
        if (last.processes.has(pid)) spent[entry.group] += entry.last - entry.first;
      }
      // Processes that ended: the postmaster's reaped-children time grew by their whole CPU;
      // less what they had when first seen, the rest is this run's. Attributed by group in
      // proportion to what each was seen to spend; what no sample saw stays `exited`.
      const reaped = last.postmasterTimes.children - first.postmasterTimes.children;
      let gone = 0;
      const seenSpent: Record<ServerCpuGroup, number> = { backends: 0, autovacuum: 0, background: 0, exited: 0 };
      for (const [pid, entry] of seen) {
        if (last.processes.has(pid)) continue;
        gone += entry.first;
        seenSpent[entry.group] += entry.last - entry.first;
      }
      const endedRun = Math.max(0, reaped - gone);
      const seenTotal = seenSpent.backends + seenSpent.autovacuum + seenSpent.background;
      const attributed = Math.min(endedRun, seenTotal);
      for (const group of ['backends', 'autovacuum', 'background'] as const) {
        if (seenTotal > 0) spent[group] += (attributed * seenSpent[group]) / seenTotal;
      }
      spent.exited += endedRun - attributed;
      const postmasterOwn = last.postmasterTimes.own - first.postmasterTimes.own;
      spent.background += postmasterOwn;
      return { ...spent, total: spent.backends + spent.autovacuum + spent.background + spent.exited };
    },
  };
}

export type ServerCpuSpent = Record<ServerCpuGroup, number> & { total: number };

/** What the server spent over a window: the WAL it wrote, and its CPU by group (null when its /proc is not readable from here). */
export interface ServerCost {
  walBytes: number;
  cpu: ServerCpuSpent | null;
  /** The window's WAL positions, for a breakdown (walBreakdown). */
  walFrom: string;
  walTo: string;
}

/**
 * Opens a window on the server `client` is connected to: its WAL position and (where /proc
 * shows it) its processes' CPU; `stop()` says what both grew by. The whole server counts,
 * other databases' work too: the bench's server runs only the case at hand.
 */
export async function watchServerCost(client: pg.Client): Promise<{ stop(): Promise<ServerCost> }> {
  const postmaster = (await readable(client)) ? await postmasterPid(client) : null;
  const cpu = postmaster === null ? null : watchServerCpu(client, postmaster);
  await cpu?.start();
  const { rows } = await client.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn');
  const lsn0 = rows[0]!.lsn;
  return {
    async stop() {
      const spent = (await cpu?.stop()) ?? null;
      const wal = await client.query<{ bytes: string; lsn: string }>(
        'SELECT pg_wal_lsn_diff(l, $1::pg_lsn)::text AS bytes, l::text AS lsn FROM pg_current_wal_lsn() l',
        [lsn0],
      );
      return { walBytes: Number(wal.rows[0]!.bytes), cpu: spent, walFrom: lsn0, walTo: wal.rows[0]!.lsn };
    },
  };
}

/**
 * What the WAL between `from` and `to` was made of (pg_walinspect, PostgreSQL 16 or later):
 * bytes by record type, and by relation (block references). For finding where a case's WAL goes
 * (BENCH_WAL_DETAIL=1); the published figures never depend on it.
 */
export async function walBreakdown(client: pg.Client, from: string, to: string): Promise<string> {
  await client.query('CREATE EXTENSION IF NOT EXISTS pg_walinspect');
  const types = await client.query<{ kind: string; n: string; bytes: string; fpi: string }>(
    `SELECT "resource_manager/record_type" AS kind, count AS n, record_size AS bytes, fpi_size AS fpi
       FROM pg_get_wal_stats($1::pg_lsn, $2::pg_lsn, true) WHERE count > 0 ORDER BY combined_size DESC LIMIT 15`,
    [from, to],
  );
  const relations = await client.query<{ rel: string; n: string; bytes: string; fpi: string }>(
    `SELECT coalesce(c.relname, b.relfilenode::text) AS rel, count(*) AS n,
            sum(b.main_data_length + b.block_data_length)::bigint AS bytes, sum(b.block_fpi_length)::bigint AS fpi
       FROM pg_get_wal_block_info($1::pg_lsn, $2::pg_lsn) b
       LEFT JOIN pg_class c ON c.relfilenode = b.relfilenode AND b.reldatabase = (SELECT oid FROM pg_database WHERE datname = current_database())
      GROUP BY 1 ORDER BY sum(b.main_data_length + b.block_data_length + b.block_fpi_length) DESC LIMIT 15`,
    [from, to],
  );
  const lines = [
    'by record type (records, record bytes, full-page image bytes):',
    ...types.rows.map((r) => `  ${r.kind}: ${r.n}, ${r.bytes}, ${r.fpi}`),
    'by relation (block references, data bytes, full-page image bytes):',
    ...relations.rows.map((r) => `  ${r.rel}: ${r.n}, ${r.bytes}, ${r.fpi}`),
  ];
  return lines.join('\n');
}
