/**
 * `leasehold dashboard`: the Next.js dashboard, served with `next start`. The package ships the
 * dashboard's sources (app/, components/, lib/, db/, next.config.ts, tsconfig.json); Next.js
 * cannot build inside node_modules, so the first run copies them into a folder of the user's
 * project (default `./.leasehold/dashboard`) and builds there, once per package version (and
 * again when the sources are newer than the build: this repo's own development). Next.js and
 * the dashboard's React packages are optional peers the user installs; their absence is said
 * with the install command.
 */
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { DASHBOARD_SOURCE_DIRS, DASHBOARD_SOURCE_FILES, buildIsStale } from '../scripts/build-state.ts';
import { migrateDatabase } from '../db/migrate.ts';
import { createDb } from '../db/client.ts';
import {
  type Command,
  type CommandContext,
  EMBEDDED_HELP,
  packageRoot,
  parseCommandArgs,
  UsageError,
  wholeNumber,
} from './command.ts';
import { commandDatabase, refuseUnsuitableSchema } from './database.ts';

/**
 * What the dashboard's build needs beyond the queue's own dependencies: what its code imports,
 * and TypeScript with the React and Node types, which next build demands of a TypeScript app
 * even when it skips type checking (and, outside CI, would install into the project itself).
 */
export const DASHBOARD_PACKAGES = [
  'next',
  'react',
  'react-dom',
  'next-auth',
  '@tanstack/react-query',
  'recharts',
  'server-only',
  'typescript',
  '@types/react',
  '@types/node',
] as const;

/** Written into the build folder after a build succeeds: the version it was built from. */
const MARKER = 'leasehold-build.json';

const HELP = `usage: leasehold dashboard [--port N] [--hostname HOST] [--dir FOLDER] [--rebuild]

Serves the dashboard (Next.js) on the database DATABASE_URL names. The first run for a version
of leasehold builds it (next build) into FOLDER, which takes a minute or two; later runs reuse
that build. Needs Next.js and the dashboard's packages in your project:
  npm install ${DASHBOARD_PACKAGES.join(' ')}

  --port N          port to listen on (default: PORT, else 3000)
  --hostname HOST   address to listen on (default: Next.js's, all interfaces)
  --dir FOLDER      the build folder (default ./.leasehold/dashboard; LEASEHOLD_DASHBOARD_DIR)
  --rebuild         build again even when the build is current
${EMBEDDED_HELP} (migrated at start)
  --help, --version

environment: DATABASE_URL (required unless --embedded), NEXTAUTH_SECRET (32+ random characters,
e.g. openssl rand -base64 32), NEXTAUTH_URL (the dashboard's public URL). Users: leasehold users add.`;

const OPTIONS = {
  port: { type: 'string' },
  hostname: { type: 'string' },
  dir: { type: 'string' },
  rebuild: { type: 'boolean' },
  embedded: { type: 'boolean' },
} as const;

/** The packages of DASHBOARD_PACKAGES that do not resolve from `dir`. */
function missingPackages(dir: string): string[] {
  const require = createRequire(path.join(dir, 'package.json'));
  return DASHBOARD_PACKAGES.filter((name) => {
    try {
      require.resolve(`${name}/package.json`);
      return false;
    } catch {
      try {
        require.resolve(name);
        return false;
      } catch {
        return true;
      }
    }
  });
}

/** The deepest folder holding both paths: Turbopack's root for the build (next.config.ts). */
function commonAncestor(a: string, b: string): string {
  const as = path.resolve(a).split(path.sep);
  const bs = path.resolve(b).split(path.sep);
  let i = 0;
  while (i < as.length && i < bs.length && as[i] === bs[i]) i++;
  return as.slice(0, i).join(path.sep) || path.sep;
}

function builtVersion(dir: string): string | null {
  try {
    return (JSON.parse(readFileSync(path.join(dir, MARKER), 'utf8')) as { version?: string }).version ?? null;
  } catch {
    return null;
  }
}

/** Copies the dashboard's sources from the package into `dir` (emptied first), without tests. */
function copySources(root: string, dir: string, version: string): void {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  for (const folder of DASHBOARD_SOURCE_DIRS)
    cpSync(path.join(root, folder), path.join(dir, folder), {
      recursive: true,
      filter: (source) => !/\.test\.tsx?$/.test(source),
    });
  for (const file of DASHBOARD_SOURCE_FILES) cpSync(path.join(root, file), path.join(dir, file));
  writeFileSync(
    path.join(dir, 'package.json'),
    `${JSON.stringify({ name: 'leasehold-dashboard-build', version, private: true, type: 'module' }, null, 2)}\n`,
  );
}

/**
 * Makes the copy resolve Leasehold's own dependencies, not the project's: the copy sits in the
 * user's project, where `zod` may be the app's zod 3 while Leasehold's zod 4 is nested under
 * node_modules/leasehold. For every dependency that resolves to another folder from the copy
 * than from the package, the copy gets a node_modules link to the package's one (inside the
 * project, so within Turbopack's root).
 */
function linkOwnDependencies(root: string, dir: string): string[] {
  const manifest = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as {
    dependencies?: Record<string, string>;
  };
  const fromPackage = createRequire(path.join(root, 'package.json'));
  const fromCopy = createRequire(path.join(dir, 'package.json'));
  const folderOf = (require: NodeJS.Require, name: string): string | null => {
    try {
      return realpathSync(path.dirname(require.resolve(`${name}/package.json`)));
    } catch {
      return null;
    }
  };
  const linked: string[] = [];
  for (const name of Object.keys(manifest.dependencies ?? {})) {
    const own = folderOf(fromPackage, name);
    if (!own || folderOf(fromCopy, name) === own) continue;
    const link = path.join(dir, 'node_modules', name);
    mkdirSync(path.dirname(link), { recursive: true });
    symlinkSync(own, link, 'dir');
    linked.push(name);
  }
  return linked;
}

async function checkDatabase(url: string, migrate: boolean): Promise<void> {
  if (migrate) await migrateDatabase(url);
  const { db, close } = createDb(url, { max: 1, applicationName: 'leasehold-cli' });
  try {
    await refuseUnsuitableSchema(db);
  } finally {
    await close();
  }
}

export const dashboardCommand: Command = {
  name: 'dashboard',
  help: HELP,
  async run(args, context: CommandContext) {
    const { values } = parseCommandArgs('dashboard', args, OPTIONS);
    const port = wholeNumber('port', values.port ?? context.env.PORT ?? '3000', 1, 65535)!;
    const secret = context.env.NEXTAUTH_SECRET ?? '';
    if (secret.length < 32)
      throw new UsageError(
        'NEXTAUTH_SECRET must be set to a random string of at least 32 characters (for example: openssl rand -base64 32); it signs the dashboard’s sessions',
      );
    const dir = path.resolve(
      context.cwd,
      values.dir ?? context.env.LEASEHOLD_DASHBOARD_DIR ?? path.join('.leasehold', 'dashboard'),
    );
    const root = packageRoot();
    if (dir === root || root.startsWith(`${dir}${path.sep}`))
      throw new UsageError(`--dir ${dir} holds the package itself; name a folder of its own`);

    const database = await commandDatabase(context, values.embedded === true);
    try {
      await checkDatabase(database.url, database.embedded);

      // Resolved from the build folder, as next build will: the user's project's node_modules.
      mkdirSync(dir, { recursive: true });
      const missing = missingPackages(dir);
      if (missing.length > 0)
        throw new UsageError(
          `the dashboard needs packages your project does not have: ${missing.join(', ')}. Install them: npm install ${DASHBOARD_PACKAGES.join(' ')}`,
        );
      const next = createRequire(path.join(dir, 'package.json')).resolve('next/dist/bin/next');
      const workspace = commonAncestor(dir, realpathSync(next));
      // NODE_ENV is left to next (build and start set production).
      const env: NodeJS.ProcessEnv = {
        ...process.env,
        ...context.env,
        DATABASE_URL: database.url,
        LEASEHOLD_DEMO: 'false',
        NEXT_TELEMETRY_DISABLED: '1',
        LEASEHOLD_DASHBOARD_ROOT: workspace,
      };

      const current = builtVersion(dir) === context.version && !buildIsStale(dir, root);
      if (values.rebuild || !current) {
        console.error(
          `leasehold dashboard: building the dashboard for leasehold ${context.version} into ${dir} (next build: the first build takes a minute or two; later runs reuse it)…`,
        );
        rmSync(path.join(dir, MARKER), { force: true });
        copySources(root, dir, context.version);
        const linked = linkOwnDependencies(root, dir);
        if (linked.length > 0)
          console.error(
            `leasehold dashboard: the build uses Leasehold's own ${linked.join(', ')} (your project has others)`,
          );
        const build = spawnSync(process.execPath, [next, 'build'], {
          cwd: dir,
          env,
          stdio: ['ignore', 'inherit', 'inherit'],
        });
        if (build.status !== 0) {
          console.error(
            `leasehold dashboard: the build failed (next build exited ${build.status ?? build.signal}); its output is above`,
          );
          return 1;
        }
        writeFileSync(
          path.join(dir, MARKER),
          `${JSON.stringify({ version: context.version, node: process.version })}\n`,
        );
      } else {
        console.error(
          `leasehold dashboard: using the build in ${dir} (leasehold ${context.version}; --rebuild builds again)`,
        );
      }
      if (!existsSync(path.join(dir, '.next', 'BUILD_ID')))
        throw new Error(`Leasehold CLI: no build in ${dir}/.next after building`);

      const startArgs = [
        next,
        'start',
        '--port',
        String(port),
        ...(values.hostname ? ['--hostname', values.hostname] : []),
      ];
      const child = spawn(process.execPath, startArgs, { cwd: dir, env, stdio: ['ignore', 'inherit', 'inherit'] });
      const forward = (signal: NodeJS.Signals) => child.kill(signal);
      process.on('SIGINT', forward);
      process.on('SIGTERM', forward);
      const code = await new Promise<number>((resolve) => child.on('exit', (c, s) => resolve(c ?? (s ? 0 : 1))));
      process.off('SIGINT', forward);
      process.off('SIGTERM', forward);
      return code;
    } finally {
      await database.stop();
    }
  },
};
