/**
 * ARCHITECTURE.md stays the one place that says who owns what: its ownership tables ("Who owns
 * what") name every product file (each .ts/.tsx that is not a test in the product folders) and
 * no file that does not exist; and every folder has a README.md that says what it owns and who
 * may import it. No database is used.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { PACKAGE_FOLDERS } from './product-files.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const PRODUCT = PACKAGE_FOLDERS;
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

/** The product files on disk, as paths from the root with `/`. */
function productFiles(root = ROOT): string[] {
  return PRODUCT.flatMap((folder) =>
    readdirSync(path.join(root, folder), { recursive: true, withFileTypes: true })
      .filter((e) => e.isFile() && /\.tsx?$/.test(e.name) && !/\.test(-d)?\.tsx?$/.test(e.name))
      .map((e) => path.relative(root, path.join(e.parentPath, e.name)).split(path.sep).join('/')),
  ).sort();
}

/**
 * The files the ownership tables name: the backticked names in each row's first cell. A name
 * without a folder is in the folder of the name before it (`lib/dal/mappers.ts`, `input.ts`);
 * a name ending in `/` is a folder row.
 */
function ownedFiles(markdown: string): string[] {
  const start = markdown.indexOf('\n## Who owns what');
  if (start < 0) throw new Error('ARCHITECTURE.md has no "## Who owns what" section');
  const next = markdown.indexOf('\n## ', start + 1);
  const section = markdown.slice(start, next < 0 ? undefined : next);
  const named: string[] = [];
  for (const line of section.split('\n')) {
    if (!line.startsWith('| `')) continue;
    const first = line.slice(1).split(/(?<!\\)\|/)[0]!;
    let folder = '';
    for (const [, name] of first.matchAll(/`([^`]+)`/g)) {
      if (name!.endsWith('/')) continue;
      const full = name!.includes('/') ? name! : `${folder}/${name}`;
      folder = path.posix.dirname(full);
      named.push(full);
    }
  }
  return named;
}

describe('ARCHITECTURE.md, "Who owns what"', () => {
  const markdown = readFileSync(path.join(ROOT, 'ARCHITECTURE.md'), 'utf8');

  it('reads the shorthand of a cell: a bare name is in the folder of the name before it', () => {
    const table = '\n## Who owns what\n\n| file | owns |\n| `lib/dal/mappers.ts`, `input.ts` | x |\n| `app/` | y |\n';
    expect(ownedFiles(table)).toEqual(['lib/dal/mappers.ts', 'lib/dal/input.ts']);
  });

  it('has a row for every product file, and names no file that does not exist', () => {
    const owned = ownedFiles(markdown);
    const onDisk = productFiles();
    const missing = onDisk.filter((f) => !owned.includes(f));
    const stale = owned.filter((f) => !existsSync(path.join(ROOT, f)));
    const twice = owned.filter((f, i) => owned.indexOf(f) !== i);
    const outside = owned.filter((f) => !PRODUCT.includes(f.split('/')[0]!));
    const problems = [
      ...missing.map((f) => `add a row (in the table of ${f.split('/')[0]}/): | \`${f}\` | what it owns |`),
      ...stale.map((f) => `remove or rename the row of \`${f}\`: no such file`),
      ...twice.map((f) => `\`${f}\` has two rows: keep one`),
      ...outside.map(
        (f) => `\`${f}\` is not in a product folder (${PRODUCT.join(', ')}): list its folder in "The rest"`,
      ),
    ];
    expect(problems, `ARCHITECTURE.md, "Who owns what":\n${problems.join('\n')}`).toEqual([]);
  });

  it('is the one ownership table: CONTRIBUTING.md points at it and has none of its own', () => {
    const contributing = readFileSync(path.join(ROOT, 'CONTRIBUTING.md'), 'utf8');
    expect(contributing).toContain('ARCHITECTURE.md');
    expect(contributing).not.toMatch(/^#+ Who owns what/m);
  });
});

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
