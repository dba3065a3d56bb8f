/**
 * Counts type assertions by file: `npx tsx scripts/count-casts.ts [folder…] [--list]` (default
 * folder `db`). Reads the syntax tree of tsconfig.json's program through TypeScript's own parser
 * (the TypeScript 7 API), so an `as` in a comment, a string or a SQL text is not a cast. Prints
 * one table for the folder's modules and one for its tests (`*.test.ts`), with columns:
 *
 * - `as`: `x as T`, not counting `as const` (`x as unknown as T` counts two: both are assertions);
 * - `as const`: literal narrowing, which asserts nothing the compiler cannot check;
 * - `<T>x`: the angle-bracket form (none expected in .ts files, but it is a cast too).
 *
 * `--list` also prints each cast's line and text, for review.
 */
import path from 'node:path';
import type { Node, SourceFile } from 'typescript/unstable/ast';
import { isAsExpression, isIdentifier, isTypeAssertion, isTypeReferenceNode } from 'typescript/unstable/ast/is';
import { API } from 'typescript/unstable/sync';

export interface CastCount {
  file: string;
  as: number;
  asConst: number;
  angle: number;
  sites: string[];
}

function isAsConst(node: Node): boolean {
  return (
    isAsExpression(node) &&
    isTypeReferenceNode(node.type) &&
    isIdentifier(node.type.typeName) &&
    node.type.typeName.text === 'const'
  );
}

export function countCasts(sourceFile: SourceFile, file: string): CastCount {
  const count: CastCount = { file, as: 0, asConst: 0, angle: 0, sites: [] };
  const site = (node: Node) => {
    const { line } = sourceFile.getLineAndCharacterOfPosition(node.getStart(sourceFile));
    count.sites.push(`${file}:${line + 1}  ${node.getText(sourceFile).replace(/\s+/g, ' ').slice(0, 100)}`);
  };
  const visit = (node: Node): undefined => {
    if (isAsConst(node)) count.asConst++;
    else if (isAsExpression(node)) {
      count.as++;
      site(node);
    } else if (isTypeAssertion(node)) {
      count.angle++;
      site(node);
    }
    node.forEachChild(visit);
  };
  visit(sourceFile);
  return count;
}

function table(title: string, rows: CastCount[]): string {
  const total = rows.reduce(
    (t, r) => ({ ...t, as: t.as + r.as, asConst: t.asConst + r.asConst, angle: t.angle + r.angle }),
    {
      file: 'total',
      as: 0,
      asConst: 0,
      angle: 0,
      sites: [],
    },
  );
  const width = Math.max(5, ...rows.map((r) => r.file.length));
  const line = (r: CastCount) =>
    `| ${r.file.padEnd(width)} | ${String(r.as).padStart(3)} | ${String(r.asConst).padStart(8)} | ${String(r.angle).padStart(4)} |`;
  return [
    title,
    `| ${'file'.padEnd(width)} |  as | as const | <T>x |`,
    `| ${'-'.repeat(width)} | --: | -------: | ---: |`,
    ...rows.map(line),
    line(total),
  ].join('\n');
}

function main() {
  const args = process.argv.slice(2);
  const list = args.includes('--list');
  const folders = args.filter((a) => !a.startsWith('--'));
  const root = process.cwd();
  const api = new API({ cwd: root });
  try {
    const snapshot = api.updateSnapshot({ openProjects: [path.join(root, 'tsconfig.json')] });
    const project = snapshot.getProjects()[0];
    if (!project) throw new Error('tsconfig.json opened no project');
    const inside = (file: string) => (folders.length === 0 ? ['db'] : folders).some((f) => file.startsWith(`${f}/`));
    const files = project.program
      .getSourceFileNames()
      .map((f) => path.relative(root, f))
      .filter((f) => !f.startsWith('..') && !f.includes('node_modules') && inside(f))
      .sort();
    const counts = files.map((file) => {
      const sourceFile = project.program.getSourceFile(path.join(root, file));
      if (!sourceFile) throw new Error(`no source file for ${file}`);
      return countCasts(sourceFile, file);
    });
    const tests = counts.filter((c) => c.file.endsWith('.test.ts'));
    const modules = counts.filter((c) => !c.file.endsWith('.test.ts'));
    console.log(table('modules', modules));
    console.log(`\n${table('tests', tests)}`);
    if (list) for (const c of counts) for (const s of c.sites) console.log(s);
  } finally {
    api.close();
  }
}

main();
