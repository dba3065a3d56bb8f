/**
 * Every folder has a README.md that says what it owns and who may import it. No database is
 * used.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
/** Every folder with a README.md header: the product's, then the tooling's and the migrations'. */
const FOLDERS = [
  'app',
  'components',
  'lib',
  'db',
  'db/queue',
  'db/queries',
  'db/migrate',
  'workers',
  'cli',
  'entry',
  'testing',
  'scripts',
  'demo',
  'chaos',
  'bench',
  'test',
  'e2e',
  'drizzle',
];

describe('folder headers', () => {
  it.each(FOLDERS)('%s/README.md says what the folder owns and who may import it', (folder) => {
    const file = path.join(ROOT, folder, 'README.md');
    expect(existsSync(file), `${folder}/README.md is missing`).toBe(true);
    const text = readFileSync(file, 'utf8');
    expect(text.startsWith(`# ${folder}/\n`), `${folder}/README.md opens with "# ${folder}/"`).toBe(true);
    expect(text).toMatch(/^- May import: /m);
    expect(text).toMatch(/^- Imported by: /m);
  });
});
