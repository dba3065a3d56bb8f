/**
 * Writes the probes' SQL from the statements a tree of Leasehold really sends: the queue
 * functions run against an executor that records each query instead of running it, so the
 * texts are the library's own, at whatever commit `--tree` holds (this tree for the new layout,
 * an export of 3ede191 for the previous one; run.sh makes both).
 *
 *   npx tsx bench/probes/statements.ts --tree DIR --out DIR [--jobs 100000]
 *
 * Writes, into --out:
 * - prepare.sql: PREPARE claimids, ack, hb (the claim, the batch acknowledgement and the
 *   heartbeat), each with the library's text. Two result lists are read differently, nothing
 *   else is changed: the claim's rows are aggregated into one array of ids (`\gset` takes one
 *   row; the review's probes did the same), and the acknowledgement's list of ids it did not
 *   complete becomes their count (normally 0, checked).
 * - heartbeat.sql: the EXECUTE of hb, its parameters in this tree's order (psql variables).
 * - enqueue.sql: the bulk enqueue of --jobs jobs (queue bench, kind bench.noop, payload
 *   {seq}), one statement with its parameters as the library builds them.
 *
 * Plans follow what the library asks of the driver: a statement it names (claim, ack) is
 * prepared once per connection and runs on its generic plan (force_generic_plan: a worker gets
 * there after five runs); one it sends unnamed (heartbeat, enqueue) is planned with its values
 * every time (force_custom_plan around its EXECUTE).
 * - statements.json: the captured texts and names as sent, for reading.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
// pg's own conversion of a parameter to its text form (arrays, dates, JSON), as it sends it.
// @ts-expect-error pg ships no types for its internal utils module
import { prepareValue } from 'pg/lib/utils.js';

type Queue = typeof import('../../db/queue/index.ts');

const { values } = parseArgs({
  options: {
    tree: { type: 'string' },
    out: { type: 'string' },
    jobs: { type: 'string', default: '100000' },
  },
});
if (!values.tree || !values.out) {
  console.error('usage: statements.ts --tree DIR --out DIR [--jobs N]');
  process.exit(2);
}
const jobs = Number(values.jobs);
const queue = (await import(pathToFileURL(path.resolve(values.tree, 'db/queue/index.ts')).href)) as Queue;

interface Sent {
  name: string | undefined;
  text: string;
  values: unknown[];
}

/** An executor that records what it is asked to run and answers with `rows(text)`. */
function recorder(rows: (text: string) => Record<string, unknown>[]) {
  const sent: Sent[] = [];
  const executor = {
    query(config: string | { name?: string; text: string; values?: unknown[] }, params?: unknown[]) {
      const q = typeof config === 'string' ? { text: config, values: params ?? [] } : config;
      sent.push({ name: q.name, text: q.text, values: q.values ?? params ?? [] });
      return Promise.resolve({ rows: rows(q.text), rowCount: 0 });
    },
  };
  return { executor: executor as unknown as Parameters<Queue['claim']>[0], sent };
}

function only(sent: Sent[], what: string): Sent {
  if (sent.length !== 1) throw new Error(`${what}: expected one statement, the library sent ${sent.length}`);
  return sent[0]!;
}

/** `text` with `from` replaced once; fails loudly when the library's text no longer has it. */
function replaceOnce(text: string, from: string | RegExp, to: string, what: string): string {
  const matches = typeof from === 'string' ? text.split(from).length - 1 : (text.match(from) ?? []).length;
  if (matches !== 1) throw new Error(`${what}: expected one ${String(from)} in the text, found ${matches}`);
  return text.replace(from, to);
}

const TOKEN = '00000000-0000-4000-8000-000000000001';
const ID = '00000000-0000-7000-8000-000000000001';

// The claim: one queue, 1,000 jobs, a 30 s lease (the probes pass their own values), of the
// probe's kind as a worker claims it where the tree claims by kind (a tree without `kinds`
// refuses the option: then as before).
let claimed = recorder(() => []);
const claimOptions = { queues: ['bench'], workerId: 'probe', limit: 1000, leaseSeconds: 30 };
try {
  await queue.claim(claimed.executor, { ...claimOptions, kinds: [{ kind: 'bench.noop', versions: [1] }] });
} catch {
  claimed = recorder(() => []);
  await queue.claim(claimed.executor, claimOptions);
}
const claimSent = only(claimed.sent, 'claim');
// Old layout: `WITH candidate AS (…) UPDATE … RETURNING …`; new: `… claimed AS (UPDATE …) … SELECT * FROM claimed`.
const claimIds = claimSent.text.includes('SELECT * FROM claimed')
  ? replaceOnce(claimSent.text, 'SELECT * FROM claimed', 'SELECT array_agg(id)::text AS ids FROM claimed', 'claim')
  : `${replaceOnce(claimSent.text, /\)\s*UPDATE jobs j/, '), claimed AS (UPDATE jobs j', 'claim')})
    SELECT array_agg(id)::text AS ids FROM claimed`;

const acked = recorder(() => []);
await queue.completeManyIfLeaseHeld(acked.executor, [{ id: ID, leaseToken: TOKEN }]);
const ackSent = only(acked.sent, 'ack');
const ackCount = replaceOnce(ackSent.text, 'SELECT w.id FROM unnest', 'SELECT count(*) AS lost FROM unnest', 'ack');

const beaten = recorder(() => []);
await queue.heartbeatManyIfLeaseHeld(beaten.executor, [{ id: ID, leaseToken: TOKEN }], { leaseSeconds: 61 });
const hbSent = only(beaten.sent, 'heartbeat');
// Which parameter is which: found by the values passed, not by position in this tree's text.
const hbArgs = hbSent.values.map((v) => {
  if (v === 61) return ':lease';
  if (Array.isArray(v) && v[0] === ID) return `:'ids'`;
  if (Array.isArray(v) && v[0] === TOKEN) return `:'toks'`;
  throw new Error(`heartbeat: unexpected parameter ${JSON.stringify(v)}`);
});

const enqueued = recorder(() => [{ inserted: jobs, keys: [], woken: 0 }]);
await queue.enqueueMany(
  enqueued.executor,
  Array.from({ length: jobs }, (_, seq) => ({ queue: 'bench', kind: 'bench.noop', payload: { seq } })),
  { notify: false },
);
const enqueueSent = only(enqueued.sent, 'enqueueMany');

/** The EXECUTE of `sent`, planned as the driver would plan it (see the header). */
function execute(sent: Sent, statement: string, args: string[], tail = ';'): string {
  const call = `EXECUTE ${statement}(${args.join(', ')})${tail}`;
  return sent.name
    ? `${call}\n`
    : `SET plan_cache_mode = force_custom_plan;\n${call}\nSET plan_cache_mode = force_generic_plan;\n`;
}
if (!claimSent.name || !ackSent.name) throw new Error('claim and ack: expected named (prepared) statements');

/** A parameter as an SQL literal: pg's text form, quoted (standard_conforming_strings is on). */
function literal(value: unknown): string {
  const text = prepareValue(value) as string | null;
  return text === null ? 'NULL' : `'${text.replaceAll("'", "''")}'`;
}

mkdirSync(values.out, { recursive: true });
writeFileSync(
  path.join(values.out, 'prepare.sql'),
  [`PREPARE claimids AS ${claimIds};`, `PREPARE ack AS ${ackCount};`, `PREPARE hb AS ${hbSent.text};`, ''].join('\n'),
);
// The claim's parameters after the five the probes pass (by kind: the kind and its version).
writeFileSync(
  path.join(values.out, 'claim-args.txt'),
  claimSent.values
    .slice(5)
    .map((v) => `, ${literal(v)}`)
    .join(''),
);
writeFileSync(path.join(values.out, 'heartbeat.sql'), execute(hbSent, 'hb', hbArgs, ' \\g /dev/null'));
writeFileSync(
  path.join(values.out, 'enqueue.sql'),
  `PREPARE enq AS ${enqueueSent.text};\n${execute(enqueueSent, 'enq', enqueueSent.values.map(literal))}DEALLOCATE enq;\n`,
);
writeFileSync(
  path.join(values.out, 'statements.json'),
  JSON.stringify(
    {
      tree: path.resolve(values.tree),
      claim: { name: claimSent.name, text: claimSent.text },
      ack: { name: ackSent.name, text: ackSent.text },
      heartbeat: { name: hbSent.name, text: hbSent.text, parameters: hbArgs },
      enqueue: { name: enqueueSent.name, text: enqueueSent.text, parameters: enqueueSent.values.length },
    },
    null,
    2,
  ),
);
console.error(`[probes] statements of ${values.tree} written to ${values.out}`);
