/**
 * The quickstart is a test (`npm run test:package`): docs/quickstart.md's fenced code blocks run
 * literally, in order, in a scratch project outside this checkout, on each Node version.
 *
 * - A block whose info string names a file (```js title="jobs.mjs"```) is written to that file.
 * - A `sh` block runs line by line (`#` lines are comments). A line that ends in
 *   `# keeps running` starts in the background and stays up until the end (workers, dashboard).
 * - Two rewrites: the package name `leasehold` in an `npm install` line becomes the packed
 *   tarball (nothing is published), and the placeholder URL of the line that writes `.env`
 *   becomes the scratch database's. Every rewrite is printed.
 * - The steps are the `## N. …` headings; there must be fewer than ten.
 *
 * The doc's reader keeps DATABASE_URL in `.env` (the doc's own first block writes it there): the
 * commands run with no DATABASE_URL and no PG* variable in their environment, which is checked
 * in a child before the first block, so every script must read `.env` as the doc says. It then
 * checks what the doc promises: the enqueued job ends `done` and the dashboard answers.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { PROJECT_DIR } from '../../cli/database-select.ts';
import {
  type Background,
  eachNodeVersion,
  log,
  nodeFolder,
  run,
  scratchDatabase,
  scratchFolder,
  start,
  Stop,
  until,
} from './common.ts';

const DOC = path.join(PROJECT_DIR, 'docs', 'quickstart.md');
const BACKGROUND = /\s+# keeps running$/;

export interface Block {
  info: string;
  body: string;
  file: string | null;
}

/** The fenced blocks of a Markdown text, in order. */
export function blocks(markdown: string): Block[] {
  const found: Block[] = [];
  const fence = /^```([^\n]*)\n([\s\S]*?)^```$/gm;
  for (const match of markdown.matchAll(fence)) {
    const info = (match[1] ?? '').trim();
    const file = /title="([^"]+)"/.exec(info)?.[1] ?? null;
    found.push({ info, body: match[2] ?? '', file });
  }
  return found;
}

export function steps(markdown: string): string[] {
  return [...markdown.matchAll(/^## (\d+)\. (.+)$/gm)].map((m) => `${m[1]}. ${m[2]}`);
}

/** The line of the doc that writes `.env`: `echo 'DATABASE_URL=…' > .env`. */
const DOTENV_LINE = /^echo 'DATABASE_URL=[^']*' > \.env\b/;

/**
 * The allowed rewrites: `npm install … leasehold …` installs the tarball instead, and the line
 * writing `.env` writes the scratch database's URL.
 */
export function rewrite(line: string, tarball: string, databaseUrl = ''): string {
  if (DOTENV_LINE.test(line)) return line.replace(/^echo 'DATABASE_URL=[^']*'/, `echo 'DATABASE_URL=${databaseUrl}'`);
  // The doc's prompt needs a terminal, which a test has not: the same password on standard input.
  if (/ --password-prompt\b/.test(line)) {
    const command = line.replace(/\s+#.*$/, '').replace(/ --password-prompt\b/, ' --password-stdin');
    return `printf '%s\\n' 'quickstart-password-1' | ${command}`;
  }
  if (!/^npm (install|i) /.test(line)) return line;
  return line
    .split(' ')
    .map((word) => (word === 'leasehold' ? tarball : word))
    .join(' ');
}

async function quickstart(major: string, tarball: string, serverUrl: string, keep: boolean): Promise<void> {
  const markdown = readFileSync(DOC, 'utf8');
  const node = nodeFolder(major);
  const project = scratchFolder(`quickstart-node${major}`);
  const database = await scratchDatabase(serverUrl, `quickstart_node${major}`);
  // Nothing of this process's database settings reaches the commands: DATABASE_URL is in .env only.
  const env: Record<string, string | undefined> = { DATABASE_URL: undefined };
  for (const key of Object.keys(process.env)) if (key.startsWith('PG')) env[key] = undefined;
  const running: Background[] = [];
  const t0 = Date.now();
  try {
    const seen = run(
      'node',
      [
        '-e',
        "console.log(JSON.stringify(Object.keys(process.env).filter((k) => k === 'DATABASE_URL' || k.startsWith('PG'))))",
      ],
      { cwd: project, node, env },
    ).stdout.trim();
    if (seen !== '[]') throw new Error(`the commands' environment holds database settings: ${seen}`);
    log(`node ${major}: the commands' environment holds no DATABASE_URL and no PG* variable`);
    let wroteDotEnv = false;
    for (const block of blocks(markdown)) {
      if (block.file) {
        writeFileSync(path.join(project, block.file), block.body);
        continue;
      }
      if (!/^(sh|bash|shell)\b/.test(block.info)) continue;
      for (const raw of block.body.split('\n')) {
        const line = raw.trim();
        if (line === '' || line.startsWith('#')) continue;
        const command = rewrite(line.replace(BACKGROUND, ''), tarball, database.url);
        if (DOTENV_LINE.test(line)) wroteDotEnv = true;
        if (command !== line.replace(BACKGROUND, '')) log(`node ${major}: rewrote \`${line}\` → \`${command}\``);
        if (BACKGROUND.test(line)) {
          log(`node ${major}: started \`${command}\``);
          running.push(start('bash', ['-c', command], { cwd: project, node, env }));
          continue;
        }
        log(`node ${major}: \`${command}\``);
        run('bash', ['-c', command], { cwd: project, node, env, timeoutMs: 600_000 });
      }
    }
    if (!wroteDotEnv) throw new Error('docs/quickstart.md has no line writing DATABASE_URL into .env');
    // What the doc promises at its end: the job ran, and the dashboard is up.
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      await until(
        'the quickstart’s job to end done',
        async () => (await client.query("SELECT 1 FROM leasehold.jobs WHERE state = 'done'")).rowCount,
        60_000,
      );
      const notDone = await client.query("SELECT id, state FROM leasehold.jobs WHERE state <> 'done'");
      if (notDone.rowCount !== 0) throw new Error(`jobs not done: ${JSON.stringify(notDone.rows)}`);
    } finally {
      await client.end();
    }
    const dashboard = /http:\/\/(localhost|127\.0\.0\.1):(\d+)/.exec(markdown);
    if (dashboard)
      await until(
        'the dashboard to answer',
        async () => {
          const ended = running.find((r) => r.child.exitCode !== null);
          if (ended) throw new Stop(`a background command exited ${ended.child.exitCode}`);
          return (await fetch(`${dashboard[0]}/login`)).ok;
        },
        420_000,
      );
    log(`node ${major}: the quickstart ran in ${Math.round((Date.now() - t0) / 1000)} s`);
  } catch (error) {
    const outputs = running.map((r) => r.output().slice(-3000)).join('\n---\n');
    throw new Error(`${(error as Error).message}\n--- background commands\n${outputs}`);
  } finally {
    for (const r of running) await r.stop();
    await database.drop();
    if (!keep) rmSync(project, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const markdown = readFileSync(DOC, 'utf8');
  const list = steps(markdown);
  log(`docs/quickstart.md has ${list.length} steps: ${list.join(' | ')}`);
  if (list.length === 0 || list.length >= 10)
    throw new Error(`the quickstart must take fewer than ten steps (${list.length})`);
  await eachNodeVersion((major, { packed, serverUrl, keep }) => quickstart(major, packed.file, serverUrl, keep));
}
