/**
 * The demo's receipt job as a user's code has it: the handler implements the contract, and the
 * contract file loads nothing of the worker, through the package's entries or around them.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { handlers, receiptSend } from './handlers.ts';
import { receiptJob } from './jobs.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
/** The package's names, as tsconfig.json's paths resolve them in this repository. */
const ENTRIES: Record<string, string> = {
  leasehold: 'entry/index.ts',
  'leasehold/worker': 'entry/worker.ts',
  'leasehold/testing': 'entry/testing.ts',
};

/** Every file of this repository reachable from `start` by its imports and re-exports. */
function reachable(start: string): string[] {
  const seen = new Set<string>();
  const visit = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    const source = readFileSync(file, 'utf8');
    for (const [, specifier] of source.matchAll(/^(?:import|export)\s[^;]*?from\s+'([^']+)'/gms)) {
      if (specifier!.startsWith('.')) visit(path.resolve(path.dirname(file), specifier!));
      else if (ENTRIES[specifier!]) visit(path.join(root, ENTRIES[specifier!]!));
    }
  };
  visit(path.join(root, start));
  return [...seen].map((file) => path.relative(root, file));
}

describe('the demo’s receipt job', () => {
  it('is what the receipt handler implements, and what the handlers file exports', () => {
    expect(receiptSend).toMatchObject({
      kind: receiptJob.kind,
      versions: [receiptJob.version],
      defaultQueue: 'receipts',
      timeoutMs: 30_000,
      redact: ['email'],
    });
    expect(receiptJob).toMatchObject({ kind: 'receipt.send', version: 1, queue: 'receipts' });
    expect(handlers).toEqual([receiptSend]);
  });

  it('loads no module of the worker: a web tier that enqueues receipts bundles no handler', () => {
    const loaded = reachable('demo/jobs.ts');
    expect(loaded).toContain('entry/index.ts'); // the walk follows the package name
    expect(loaded).toContain('db/queue/job-contract.ts'); // and the entry's re-exports
    expect(loaded.filter((file) => file.startsWith('workers/') || file === 'demo/handlers.ts')).toEqual([]);
    // The handlers file, by contrast, reaches the worker through leasehold/worker.
    expect(reachable('demo/handlers.ts')).toContain('workers/handler.ts');
  });
});
