/**
 * Counts type assertions by file: `npx tsx scripts/count-casts.ts [folder or file…] [--product]
 * [--list] [--max N]` (default folder `db`; `--product` adds PRODUCT). Reads the syntax tree of
 * tsconfig.json's program through TypeScript's own parser (the TypeScript 7 API), so an `as` in a
 * comment, a string or a SQL text is not a cast. Prints one table for the modules and one for
 * the tests (`*.test.ts`, `*.test.tsx`, `*.test-d.ts`), with columns:
 *
 * - `as`: `x as T`, not counting `as const` (`x as unknown as T` counts two: both are assertions),
 *   and each call of a cast helper (a function whose body is only a cast, `(v) => v as T`): the
 *   helper hides a cast at every call, so each call counts as one;
 * - `as const`: literal narrowing, which asserts nothing the compiler cannot check;
 * - `<T>x`: the angle-bracket form (none expected in .ts files, but it is a cast too);
 * - `ts-`: comments that switch the checker off for a line or a file (`@ts-ignore`,
 *   `@ts-expect-error`, `@ts-nocheck`).
 *
 * `--list` also prints each cast's line and text, for review. `--max N` (what `npm run lint`
 * runs, with `--product`) fails when the modules hold more than N casts (`as` and `<T>x`), or any
 * `ts-` comment: the ceiling is the count when it was set, lowered as casts go and never raised
 * without a reason in the commit. Tests may cast and switch the checker off (a test of a refusal
 * passes what the types forbid).
 */
import path from 'node:path';
import type { Node, SourceFile } from 'typescript/unstable/ast';
import {
  isArrowFunction,
  isAsExpression,
  isBlock,
  isCallExpression,
  isFunctionDeclaration,
  isFunctionExpression,
  isIdentifier,
  isParenthesizedExpression,
  isReturnStatement,
  isTypeAssertion,
  isTypeReferenceNode,
  isVariableDeclaration,
} from 'typescript/unstable/ast/is';
import { API } from 'typescript/unstable/sync';
import { PACKAGE_FOLDERS, PRODUCT_ROOT_FILES } from '../test/product-files.ts';

/** The product's folders and root modules (test/product-files.ts's lists): what `--product` counts. */
export const PRODUCT = [...PACKAGE_FOLDERS, ...PRODUCT_ROOT_FILES];

export interface CastCount {
  file: string;
  as: number;
  asConst: number;
  angle: number;
  /** `@ts-ignore`, `@ts-expect-error` and `@ts-nocheck` comments. */
  tsComments: number;
  sites: string[];
}

export const isTestFile = (file: string) => /\.test(-d)?\.tsx?$/.test(file);

const CHECKER_OFF = /(?:\/\/|\/\*)\s*@ts-(?:ignore|expect-error|nocheck)\b/g;

function isAsConst(node: Node): boolean {
  return (
    isAsExpression(node) &&
    isTypeReferenceNode(node.type) &&
    isIdentifier(node.type.typeName) &&
    node.type.typeName.text === 'const'
  );
}

/** The body of a function when it is one expression (`=> e`, or `{ return e; }`), without parentheses. */
function onlyExpression(body: Node | undefined): Node | undefined {
  let expression: Node | undefined = body;
  if (expression && isBlock(expression)) {
    const [only, ...rest] = expression.statements;
    expression = rest.length === 0 && only && isReturnStatement(only) ? only.expression : undefined;
  }
  while (expression && isParenthesizedExpression(expression)) expression = expression.expression;
  return expression;
}

const isCast = (node: Node | undefined) =>
  node !== undefined && ((isAsExpression(node) && !isAsConst(node)) || isTypeAssertion(node));

/** The names of the functions in `sourceFile` whose body is only a cast (`const asRow = (v: unknown) => v as Row`). */
export function castHelpers(sourceFile: SourceFile): Set<string> {
  const names = new Set<string>();
  const visit = (node: Node): undefined => {
    if (isFunctionDeclaration(node) && node.name && isCast(onlyExpression(node.body))) names.add(node.name.text);
    if (
      isVariableDeclaration(node) &&
      isIdentifier(node.name) &&
      node.initializer &&
      (isArrowFunction(node.initializer) || isFunctionExpression(node.initializer)) &&
      isCast(onlyExpression(node.initializer.body))
    )
      names.add(node.name.text);
    node.forEachChild(visit);
  };
  visit(sourceFile);
  return names;
}

/** Whether `text` imports `name` by that name (`import { name } from …`, also among others, also `type`). */
const importsName = (text: string, name: string) =>
  new RegExp(`import\\s+(?:type\\s+)?\\{[^}]*\\b${name}\\b[^}]*\\}\\s+from`).test(text);

export function countCasts(sourceFile: SourceFile, file: string, helpers: ReadonlySet<string> = new Set()): CastCount {
  const count: CastCount = {
    file,
    as: 0,
    asConst: 0,
    angle: 0,
    tsComments: sourceFile.text.match(CHECKER_OFF)?.length ?? 0,
    sites: [],
  };
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
    } else if (isCallExpression(node) && isIdentifier(node.expression) && helpers.has(node.expression.text)) {
      count.as++;
      site(node);
    }
    node.forEachChild(visit);
  };
  visit(sourceFile);
  return count;
}

function table(title: string, rows: CastCount[]): string {
  const total = rows.reduce(
    (t, r) => ({
      ...t,
      as: t.as + r.as,
      asConst: t.asConst + r.asConst,
      angle: t.angle + r.angle,
      tsComments: t.tsComments + r.tsComments,
    }),
    { file: 'total', as: 0, asConst: 0, angle: 0, tsComments: 0, sites: [] },
  );
  const width = Math.max(5, ...rows.map((r) => r.file.length));
  const line = (r: CastCount) =>
    `| ${r.file.padEnd(width)} | ${String(r.as).padStart(3)} | ${String(r.asConst).padStart(8)} | ${String(r.angle).padStart(4)} | ${String(r.tsComments).padStart(3)} |`;
  return [
    title,
    `| ${'file'.padEnd(width)} |  as | as const | <T>x | ts- |`,
    `| ${'-'.repeat(width)} | --: | -------: | ---: | --: |`,
    ...rows.map(line),
    line(total),
  ].join('\n');
}

function main(): number {
  const args = process.argv.slice(2);
  const list = args.includes('--list');
  const maxAt = args.indexOf('--max');
  const max = maxAt === -1 ? undefined : Number(args[maxAt + 1]);
  if (max !== undefined && !Number.isInteger(max)) throw new Error('--max takes a whole number');
  const named = args.filter((a, i) => !a.startsWith('--') && !(maxAt !== -1 && i === maxAt + 1));
  const folders = [...named, ...(args.includes('--product') ? PRODUCT : [])];
  const root = process.cwd();
  const api = new API({ cwd: root });
  try {
    const snapshot = api.updateSnapshot({ openProjects: [path.join(root, 'tsconfig.json')] });
    const project = snapshot.getProjects()[0];
    if (!project) throw new Error('tsconfig.json opened no project');
    const inside = (file: string) =>
      (folders.length === 0 ? ['db'] : folders).some((f) => file === f || file.startsWith(`${f}/`));
    const files = project.program
      .getSourceFileNames()
      .map((f) => path.relative(root, f))
      .filter((f) => !f.startsWith('..') && !f.includes('node_modules') && inside(f))
      .sort();
    const sources = files.map((file) => {
      const sourceFile = project.program.getSourceFile(path.join(root, file));
      if (!sourceFile) throw new Error(`no source file for ${file}`);
      return { file, sourceFile };
    });
    // A helper's calls count where it is declared and where it is imported by its name.
    const declared = sources.map(({ sourceFile }) => castHelpers(sourceFile));
    const exported = new Set(declared.flatMap((names) => [...names]));
    const counts = sources.map(({ file, sourceFile }, i) => {
      const helpers = new Set(declared[i]);
      for (const name of exported) if (importsName(sourceFile.text, name)) helpers.add(name);
      return countCasts(sourceFile, file, helpers);
    });
    const helpers = new Map(sources.flatMap(({ file }, i) => [...declared[i]!].map((name) => [name, file] as const)));
    const tests = counts.filter((c) => isTestFile(c.file));
    const modules = counts.filter((c) => !isTestFile(c.file));
    console.log(table('modules', modules));
    console.log(`\n${table('tests', tests)}`);
    if (helpers.size > 0)
      console.log(
        `\ncast helpers (each call counts as a cast): ${[...helpers].map(([name, file]) => `${name} (${file})`).join(', ')}`,
      );
    if (list) for (const c of counts) for (const s of c.sites) console.log(s);
    if (max === undefined) return 0;
    const casts = modules.reduce((n, c) => n + c.as + c.angle, 0);
    const off = modules.filter((c) => c.tsComments > 0);
    let code = 0;
    if (casts > max) {
      console.error(
        `count-casts: the modules hold ${casts} casts, over the ceiling of ${max}: check the value instead (a guard, a schema, a typed row), or lower another cast; --list shows them`,
      );
      code = 1;
    }
    if (off.length > 0) {
      console.error(
        `count-casts: @ts-ignore, @ts-expect-error or @ts-nocheck outside tests, in ${off.map((c) => c.file).join(', ')}: fix the type instead`,
      );
      code = 1;
    }
    if (code === 0) console.log(`\ncount-casts: ${casts} casts in the modules, within the ceiling of ${max}`);
    return code;
  } finally {
    api.close();
  }
}

process.exitCode = main();
