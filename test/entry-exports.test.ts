/**
 * The package entries' names (docs/versioning.md: the public API is what `exports` lists): each
 * entry is an explicit list (no `export *`, which would make public whatever its folder adds),
 * and its names are the ones below. A name added, renamed or dropped fails here first: change
 * the list with the CHANGELOG entry that says so. Values are read from the loaded module; the
 * type-only names (which leave no trace at run time) from the file's `export type { … }` lists.
 * No database is used.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from './cli.ts';
import { ENTRIES } from './entry-names.ts';

const source = (entry: string) => readFileSync(path.join(ROOT, 'entry', `${entry}.ts`), 'utf8');

describe('the package entries', () => {
  it.each(Object.keys(ENTRIES))('entry/%s.ts names every export, with no export *', (entry) => {
    expect(source(entry)).not.toMatch(/^export \*/m);
  });

  it.each(Object.entries(ENTRIES))('entry/%s.ts exports exactly its values', async (entry, { values }) => {
    const loaded = (await import(`../entry/${entry}.ts`)) as Record<string, unknown>;
    expect(Object.keys(loaded).sort()).toEqual([...values].sort());
  });

  it.each(Object.entries(ENTRIES))('entry/%s.ts exports exactly its types', (entry, { types }) => {
    const named = [...source(entry).matchAll(/^export type \{([^}]*)\}/gm)].flatMap((m) =>
      m[1]!
        .split(',')
        .map((n) => n.trim())
        .filter(Boolean),
    );
    expect(named.sort()).toEqual([...types].sort());
  });
});
