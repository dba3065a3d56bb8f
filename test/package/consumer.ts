/**
 * The consumer test (`npm run test:package`): Leasehold used as a service outside this
 * repository would use it, on each Node version users run (20, 22, 24).
 *
 * Once: `npm pack`, then publint and @arethetypeswrong/cli on the tarball, and a program compiled
 * against it with skipLibCheck: false, nothing but the tarball and TypeScript installed
 * (declarations-check.ts).
 * Per Node version, in a scratch project whose database already has the app's own `users` and
 * `jobs` tables in `public` and its own Drizzle journal:
 *  1. install the tarball alone (the worker-only install): no Next.js, React or next-auth
 *     arrives, no package asks to run an install script, and every public entry loads;
 *  2. `npx leasehold --version` names that Node; `npx leasehold migrate`;
 *  3. enqueue from the app's own transaction (one commit, one rollback) with a job contract
 *     validated by zod 3 (Standard Schema, not Leasehold's own zod);
 *  4. `npx leasehold workers --handlers ./handlers.mjs` runs it: the job ends `done`, the
 *     handler's row is in the app's table, the rolled-back job never existed;
 *  5. the dashboard's packages installed, `npx leasehold users add`, `npx leasehold dashboard`
 *     beside a local OpenID Connect provider (test/oidc-provider.ts, in this process): sign in
 *     over HTTP as the built-in user and through single sign-on, and read the job's page with
 *     each session; a single sign-on user without the role claim is refused;
 *  6. the catalog outside `leasehold` and the app's journal rows are what they were before.
 *
 * `--node 20,22` limits the versions; `--keep` leaves the scratch folders.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { DASHBOARD_PACKAGES } from '../../cli/dashboard.ts';
import { PROJECT_DIR } from '../../cli/database-select.ts';
import { catalogOutside } from '../catalog.ts';
import {
  diskKilobytes,
  installedPackages,
  installScripts,
  log,
  nodeFolder,
  pack,
  packageTestArgs,
  run,
  scratchDatabase,
  scratchFolder,
  server,
  Stop,
  start,
  until,
} from './common.ts';
import { freePort } from '../../cli/database-select.ts';
import { startOidcProvider } from '../oidc-provider.ts';
import { broughtByTypes, checkDeclarations } from './declarations-check.ts';
import { signIn, signInWithOidc } from './session.ts';

const { versions, keep } = packageTestArgs();
const manifest = JSON.parse(readFileSync(path.join(PROJECT_DIR, 'package.json'), 'utf8')) as {
  version: string;
  peerDependencies: Record<string, string>;
  dependencies: Record<string, string>;
};
const figures: Record<string, unknown> = {};
const began = Date.now();

const packed = pack();
log(
  `packed ${path.basename(packed.file)}: ${packed.size} bytes, ${packed.unpackedSize} unpacked, ${packed.files.length} files`,
);
figures.tarballBytes = packed.size;
figures.unpackedBytes = packed.unpackedSize;
const stray = packed.files.filter((f) => /\.test(-d)?\.ts$|\.test\.js$|^test\/|^e2e\/|^chaos\/|^bench\//.test(f));
if (stray.length > 0) throw new Error(`the tarball carries test or bench files: ${stray.join(', ')}`);

// The package's metadata and types, as a registry and a TypeScript user would see them.
run(path.join(PROJECT_DIR, 'node_modules', '.bin', 'publint'), ['run', '--strict', PROJECT_DIR], { cwd: PROJECT_DIR });
run(path.join(PROJECT_DIR, 'node_modules', '.bin', 'attw'), [packed.file, '--profile', 'esm-only'], {
  cwd: PROJECT_DIR,
});
log('publint and attw (esm-only profile) pass');
checkDeclarations(packed.file, { keep });

const pgServer = await server();
try {
  for (const major of versions) await consumer(major);
} finally {
  await pgServer.stop();
}
log(`figures ${JSON.stringify(figures)}`);
log(`all versions passed in ${Math.round((Date.now() - began) / 1000)} s`);

async function consumer(major: string): Promise<void> {
  const node = nodeFolder(major);
  const t0 = Date.now();
  const project = scratchFolder(`consumer-node${major}`);
  const database = await scratchDatabase(pgServer.url, `consumer_node${major}`);
  log(`node ${major}: project ${project}, database ${database.name}`);
  const env = { DATABASE_URL: database.url };
  const app = new pg.Client({ connectionString: database.url });
  await app.connect();
  try {
    // The application was here first: its own users and jobs tables and its own Drizzle journal.
    await app.query(`
      CREATE TABLE public.users (id serial PRIMARY KEY, email text NOT NULL UNIQUE);
      CREATE TABLE public.jobs (id serial PRIMARY KEY, title text NOT NULL);
      CREATE SCHEMA drizzle;
      CREATE TABLE drizzle.__drizzle_migrations (id serial PRIMARY KEY, hash text NOT NULL, created_at bigint);
      INSERT INTO drizzle.__drizzle_migrations (hash, created_at) VALUES ('app-0000', 1700000000000);
    `);
    const catalogBefore = await catalogOutside(app);
    const journalBefore = (await app.query('SELECT * FROM drizzle.__drizzle_migrations ORDER BY id')).rows;

    writeFileSync(
      path.join(project, 'package.json'),
      `${JSON.stringify({ name: 'consumer-app', private: true, type: 'module' }, null, 2)}\n`,
    );
    // 1. The worker-only install: the tarball, the app's own pg and its zod 3.
    run('npm', ['install', '--no-audit', '--no-fund', packed.file, 'pg@^8', 'zod@^3.25'], { cwd: project, node });
    const installed = installedPackages(project);
    const typesOwn = broughtByTypes(project); // @types/node, with @types/pg (declarations-check.ts)
    const dashboardArrived = DASHBOARD_PACKAGES.filter((name) => installed.has(name) && !typesOwn.includes(name));
    if (dashboardArrived.length > 0) throw new Error(`a worker-only install pulled in ${dashboardArrived.join(', ')}`);
    const scripts = installScripts(project);
    if (scripts.length > 0) throw new Error(`installed packages with install scripts: ${scripts.join(', ')}`);
    figures[`workerInstallKb_node${major}`] = diskKilobytes(path.join(project, 'node_modules'));
    figures[`leaseholdInstallKb_node${major}`] = diskKilobytes(path.join(project, 'node_modules', 'leasehold'));
    run(
      'node',
      [
        '--input-type=module',
        '-e',
        "for (const entry of ['leasehold', 'leasehold/worker', 'leasehold/testing']) { const m = await import(entry); if (Object.keys(m).length === 0) throw new Error(entry + ' exports nothing'); }",
      ],
      { cwd: project, node },
    );
    // And from CommonJS: Node >= 20.19 require()s ES modules (engines says so).
    run('node', ['-e', "for (const e of ['leasehold', 'leasehold/worker', 'leasehold/testing']) require(e)"], {
      cwd: project,
      node,
    });

    // 2. Which Node ran, and the schema.
    const version = run('npx', ['leasehold', '--version'], { cwd: project, node, env }).stdout;
    if (!version.includes(manifest.version) || !version.includes(`v${major}.`))
      throw new Error(
        `leasehold --version printed ${JSON.stringify(version)}; wanted ${manifest.version} on Node ${major}`,
      );
    run('npx', ['leasehold', 'migrate'], { cwd: project, node, env });

    // 3. The app's files: a contract, its handler, and an enqueue in the app's own transaction.
    writeFileSync(
      path.join(project, 'jobs.mjs'),
      `import { defineJob } from 'leasehold';
import { z } from 'zod';
export const welcomeJob = defineJob({
  kind: 'welcome.send',
  version: 1,
  queue: 'mail',
  schema: z.object({ userId: z.number().int(), email: z.string().email() }),
});
`,
    );
    writeFileSync(
      path.join(project, 'handlers.mjs'),
      `import { defineHandler } from 'leasehold/worker';
import pg from 'pg';
import { welcomeJob } from './jobs.mjs';
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 2 });
export const handlers = [
  defineHandler(welcomeJob, async ({ payload }) => {
    await pool.query('INSERT INTO public.jobs (title) VALUES ($1)', ['welcomed ' + payload.email]);
  }),
];
`,
    );
    writeFileSync(
      path.join(project, 'signup.mjs'),
      `import { enqueue } from 'leasehold';
import pg from 'pg';
import { welcomeJob } from './jobs.mjs';
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL });
async function signUp(email, commit) {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const { rows } = await client.query('INSERT INTO public.users (email) VALUES ($1) RETURNING id', [email]);
    const job = await enqueue(client, welcomeJob, { userId: rows[0].id, email });
    await client.query(commit ? 'COMMIT' : 'ROLLBACK');
    return job.id;
  } finally {
    client.release();
  }
}
const committed = await signUp('ada@example.com', true);
const rolledBack = await signUp('bob@example.com', false);
console.log(JSON.stringify({ committed, rolledBack }));
await pool.end();
`,
    );
    const ids = JSON.parse(run('node', ['signup.mjs'], { cwd: project, node, env }).stdout.trim()) as {
      committed: string;
      rolledBack: string;
    };
    const rolledBack = await app.query('SELECT 1 FROM leasehold.jobs WHERE id = $1', [ids.rolledBack]);
    if (rolledBack.rowCount !== 0) throw new Error('the rolled-back transaction left its job behind');

    // 4. The CLI worker runs it.
    // The bin itself rather than npx, whose own exit on SIGTERM would hide the worker's.
    const bin = path.join(project, 'node_modules', '.bin', 'leasehold');
    const workers = start(bin, ['workers', '--handlers', './handlers.mjs'], { cwd: project, node, env });
    let ran: unknown = null;
    try {
      await until(
        'the job to end done',
        async () =>
          (await app.query("SELECT 1 FROM leasehold.jobs WHERE id = $1 AND state = 'done'", [ids.committed])).rowCount,
        60_000,
      );
    } catch (error) {
      ran = error;
    }
    const code = await workers.stop();
    if (ran) throw new Error(`${(ran as Error).message}\n--- workers\n${workers.output().slice(-4000)}`);
    if (code !== 0) throw new Error(`leasehold workers exited ${code} on SIGTERM\n${workers.output().slice(-4000)}`);
    const effect = await app.query("SELECT title FROM public.jobs WHERE title = 'welcomed ada@example.com'");
    if (effect.rowCount !== 1) throw new Error(`the handler's row is missing or doubled (${effect.rowCount})`);
    const users = await app.query('SELECT email FROM public.users ORDER BY id');
    if (users.rows.map((r) => r.email).join() !== 'ada@example.com') throw new Error('the app’s users table changed');

    // 5. The dashboard, from the same package, once its packages are installed.
    const peers = DASHBOARD_PACKAGES.map((name) => `${name}@${manifest.peerDependencies[name]}`);
    run('npm', ['install', '--no-audit', '--no-fund', ...peers], { cwd: project, node });
    // The password piped in, as the docs show it: never an argument (docs/cli.md).
    run('npx', ['leasehold', 'users', 'add', 'support@example.com', '--role', 'viewer', '--password-stdin'], {
      cwd: project,
      node,
      env,
      input: 'consumer-password-1\n',
    });
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const idp = await startOidcProvider({
      port: await freePort(),
      dashboardUrls: [base],
      accounts: [
        { login: 'olive', email: 'olive@sso.example.com', role: 'operator' },
        { login: 'nora', email: 'nora@sso.example.com' },
      ],
    });
    const dashboard = start(bin, ['dashboard', '--port', String(port)], {
      cwd: project,
      node,
      env: {
        ...env,
        NEXTAUTH_URL: base,
        NEXTAUTH_SECRET: 'consumer-test-secret-0123456789abcdef',
        LEASEHOLD_OIDC_ISSUER: idp.issuer,
        LEASEHOLD_OIDC_CLIENT_ID: idp.clientId,
        LEASEHOLD_OIDC_CLIENT_SECRET: idp.clientSecret,
      },
    });
    try {
      await until(
        'the dashboard to answer',
        async () => {
          if (dashboard.child.exitCode !== null)
            throw new Stop(`leasehold dashboard exited ${dashboard.child.exitCode}`);
          return (await fetch(`${base}/login`)).ok;
        },
        420_000,
      );
      const cookie = await signIn(base, 'support@example.com', 'consumer-password-1');
      const page = await fetch(`${base}/jobs/${ids.committed}`, { headers: { cookie } });
      const html = await page.text();
      if (page.status !== 200 || !html.includes(ids.committed) || !html.includes('done'))
        throw new Error(`the job page answered ${page.status} without the job (${html.slice(0, 300)})`);
      // Through single sign-on: the role from the provider's claim, no users row.
      const ssoCookie = await signInWithOidc(base, 'olive');
      const ssoPage = await fetch(`${base}/jobs/${ids.committed}`, { headers: { cookie: ssoCookie } });
      const ssoHtml = await ssoPage.text();
      if (ssoPage.status !== 200 || !ssoHtml.includes(ids.committed) || !ssoHtml.includes('olive@sso.example.com'))
        throw new Error(
          `the job page answered ${ssoPage.status} without the job for single sign-on (${ssoHtml.slice(0, 300)})`,
        );
      const refused = await signInWithOidc(base, 'nora').then(
        () => null,
        (error: unknown) => error as Error,
      );
      if (!refused?.message.includes('AccessDenied'))
        throw new Error(
          `a single sign-on user without the role claim was not refused (${refused?.message ?? 'signed in'})`,
        );
      log(`node ${major}: the job page opened after single sign-on`);
      const anonymous = await fetch(`${base}/jobs/${ids.committed}`, { redirect: 'manual' });
      if (anonymous.status < 300 || anonymous.status >= 400) throw new Error('the job page answered without a session');
    } catch (error) {
      throw new Error(`${(error as Error).message}\n--- dashboard\n${dashboard.output().slice(-4000)}`);
    } finally {
      await dashboard.stop();
      await idp.stop();
    }

    // 6. Nothing of the app's changed.
    const catalogAfter = await catalogOutside(app);
    const journalAfter = (await app.query('SELECT * FROM drizzle.__drizzle_migrations ORDER BY id')).rows;
    if (JSON.stringify(catalogAfter) !== JSON.stringify(catalogBefore))
      throw new Error('the catalog outside the leasehold schema changed');
    if (JSON.stringify(journalAfter) !== JSON.stringify(journalBefore)) throw new Error('the app’s journal changed');
    const seconds = Math.round((Date.now() - t0) / 1000);
    figures[`seconds_node${major}`] = seconds;
    log(`node ${major}: passed in ${seconds} s`);
  } finally {
    await app.end();
    await database.drop();
    if (!keep) rmSync(project, { recursive: true, force: true });
  }
}
