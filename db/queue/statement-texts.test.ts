/**
 * The statement texts the bench measured stay byte for byte: the claim (each shape), the
 * acknowledgement and the single enqueue, as a runner receives them. No database: a
 * StatementRunner records each text and answers with no rows (or one plausible row).
 */
import { describe, expect, it } from 'vitest';
import { claim, ClaimOptionsCache, type ClaimOptions } from './claim.ts';
import { enqueue } from './enqueue.ts';
import type { StatementRunner } from './executor.ts';
import { completeManyIfLeaseHeld } from './settle.ts';

function recorder(answer: (text: string) => unknown[] = () => []): StatementRunner & { texts: string[] } {
  const texts: string[] = [];
  return {
    texts,
    runStatement: async (text) => {
      texts.push(text);
      return answer(text);
    },
  };
}

const ID = '00000000-0000-4000-8000-000000000001';
const TOKEN = '00000000-0000-4000-8000-000000000002';

describe('the measured statement texts', () => {
  // One of each shape: any kind of one queue, of two; one kind version, two; asynchronous commit.
  const SHAPES: ClaimOptions[] = [
    { queues: ['q'], workerId: 'w', limit: 1, leaseSeconds: 30 },
    { queues: ['q', 'r'], workerId: 'w', limit: 1, leaseSeconds: 30 },
    { queues: ['q'], workerId: 'w', limit: 1, leaseSeconds: 30, kinds: [{ kind: 'k', versions: [1] }] },
    {
      queues: ['q'],
      workerId: 'w',
      limit: 1,
      leaseSeconds: 30,
      kinds: [
        { kind: 'k', versions: [1] },
        { kind: 'l', versions: [2] },
      ],
    },
    { queues: ['q'], workerId: 'w', limit: 1, leaseSeconds: 30, asyncCommit: true },
  ];

  it('keeps the claim texts of every shape byte for byte', async () => {
    const runner = recorder();
    for (const options of SHAPES) await claim(runner, options);
    expect(runner.texts).toMatchSnapshot();
    // A claimer's own cache without a bound runs the same texts.
    const cached = recorder();
    for (const options of SHAPES) await claim(cached, options, new ClaimOptionsCache());
    expect(cached.texts).toEqual(runner.texts);
  });

  it('keeps the bounded claim texts (a claimer with a lower bound) of every shape byte for byte', async () => {
    const runner = recorder();
    for (const options of SHAPES) await claim(runner, options, new ClaimOptionsCache({ bound: true }));
    expect(runner.texts).toMatchSnapshot();
  });

  it('keeps the acknowledgement text byte for byte', async () => {
    const runner = recorder();
    await completeManyIfLeaseHeld(runner, [{ id: ID, leaseToken: TOKEN }]);
    expect(runner.texts).toMatchSnapshot();
  });

  it('keeps the single enqueue texts (priority 0 and aging) byte for byte', async () => {
    const now = new Date('2026-01-01T00:00:00Z');
    const runner = recorder(() => [{ run_at: now, expires_at: null, created_at: now, woken: null }]);
    await enqueue(runner, { kind: 'k', payload: {}, queue: 'q' });
    await enqueue(runner, { kind: 'k', payload: {}, queue: 'q', priority: 3 });
    expect(runner.texts).toMatchSnapshot();
  });
});
