/**
 * `leasehold dashboard`: the Next.js dashboard, served with `next start`. The package ships the
 * dashboard's sources (app/, components/, lib/, db/, next.config.ts, instrumentation.ts, proxy.ts, tsconfig.json);
 * Next.js cannot build inside node_modules, so the first run copies them into a folder of the
 * user's project (default `./.leasehold/dashboard`) and builds there, once per package version (and
 * again when the sources are newer than the build: this repo's own development). Next.js and
 * the dashboard's React packages are optional peers the user installs; their absence is said
 * with the install command.
 *
 * `leasehold dashboard build --base-path /leasehold` builds that copy for a path prefix (Next.js
 * fixes basePath at build time); the build marker remembers it, and serving then uses it.
 * Against DATABASE_URL the dashboard runs no DDL: it checks the schema and its login's grants
 * first (cli/dashboard-database.ts); only the embedded development server is migrated.
 */
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { DASHBOARD_SOURCE_DIRS, DASHBOARD_SOURCE_FILES, buildIsStale } from './build-state.ts';
import { migrateDatabase } from '../db/migrate/index.ts';
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
import { checkDashboardDatabase } from './dashboard-database.ts';
import { commandDatabase } from './database.ts';
import { parseWebEnv } from '../lib/settings.ts';

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

/** Written into the build folder after a build succeeds: the version and base path it was built for. */
export const MARKER = 'leasehold-build.json';

export interface BuildMarker {
  version: string;
  node?: string;
  /** '' at the root (markers written before base paths had none: the root). */
  basePath: string;
}

const HELP = `usage: leasehold dashboard [--port N] [--hostname HOST] [--dir FOLDER] [--base-path PATH] [--rebuild]
       leasehold dashboard build [--dir FOLDER] [--base-path PATH] [--rebuild]

Serves the dashboard (Next.js) on the database DATABASE_URL names. The first run for a version
of leasehold builds it (next build) into FOLDER, which takes minutes; later runs reuse that
build. \`build\` only builds (for a path prefix with --base-path), for serving later.
Needs Next.js and the dashboard's packages in your project:
  npm install ${DASHBOARD_PACKAGES.join(' ')}

It runs no DDL on DATABASE_URL: the schema must be migrated (leasehold migrate) and the login
must have the role leasehold_dashboard (db/roles.sql); it says what is missing at start.

  --port N          port to listen on (default: PORT, else 3000)
  --hostname HOST   address to listen on (default: LEASEHOLD_DASHBOARD_HOSTNAME, else 127.0.0.1, this
                    machine only; 0.0.0.0 for every interface, as in a container: docs/dashboard.md)
  --dir FOLDER      the build folder (default ./.leasehold/dashboard; LEASEHOLD_DASHBOARD_DIR)
  --base-path PATH  serve under a path prefix behind your proxy, e.g. /leasehold (LEASEHOLD_BASE_PATH;
                    fixed at build time: a build for another path is built again; / for none).
                    Default when serving: the path the build in FOLDER was made for
  --rebuild         build again even when the build is current
${EMBEDDED_HELP} (migrated at start)
  --help, --version

environment: DATABASE_URL (required unless --embedded), NEXTAUTH_SECRET (32+ random characters,
e.g. openssl rand -base64 32), NEXTAUTH_URL (the dashboard's public URL; under a base path with it
and /api/auth: https://ops.example.com/leasehold/api/auth). Users: leasehold users add.
docs/dashboard.md: your database, your proxy.`;

const OPTIONS = {
  port: { type: 'string' },
  hostname: { type: 'string' },
  dir: { type: 'string' },
  'base-path': { type: 'string' },
  rebuild: { type: 'boolean' },
  embedded: { type: 'boolean' },
} as const;

/**
 * `--base-path`'s value as Next.js takes it: '' for none (`''` or `/`), else a leading slash and
 * none at the end (`/leasehold/` is `/leasehold`). A UsageError for anything else.
 */
/** The address `next start` listens on: --hostname, else LEASEHOLD_DASHBOARD_HOSTNAME, else this machine only. */
export function dashboardHostname(flag: string | undefined, env: Record<string, string | undefined>): string {
  const host = (flag ?? env.LEASEHOLD_DASHBOARD_HOSTNAME ?? '').trim();
  if (flag !== undefined && host === '') throw new UsageError('--hostname needs an address, e.g. 127.0.0.1 or 0.0.0.0');
  return host || '127.0.0.1';
}

export function normalizeBasePath(value: string): string {
  const trimmed = value.trim().replace(/\/+$/, '');
  if (trimmed === '') return '';
  if (!/^\/[A-Za-z0-9._~!$&'()*+,;=:@%-]+(\/[A-Za-z0-9._~!$&'()*+,;=:@%-]+)*$/.test(trimmed))
    throw new UsageError(
      `--base-path must be a URL path such as /leasehold (a leading slash, no query or fragment), not ${JSON.stringify(value)}`,
    );
  return trimmed;
}

/**
 * NEXTAUTH_URL for a dashboard under `basePath`: next-auth takes the URL's path as the path of
 * its own routes, so under /leasehold it must be `…/leasehold/api/auth`. The public URL alone
 * (`https://host/leasehold`) is completed; another path is refused with the one to set.
 */
export function nextAuthUrlFor(value: string | undefined, basePath: string): string | undefined {
  if (!value) {
    if (basePath)
      throw new UsageError(
        `NEXTAUTH_URL must be set under a base path: the dashboard's public URL with ${basePath}/api/auth, for example https://ops.example.com${basePath}/api/auth`,
      );
    return value;
  }
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new UsageError(
      `NEXTAUTH_URL must be a URL such as https://ops.example.com${basePath}/api/auth, not ${value}`,
    );
  }
  const pathname = url.pathname.replace(/\/+$/, '');
  if (pathname === `${basePath}/api/auth`) return value;
  if (pathname === basePath) return `${url.origin}${basePath}/api/auth`;
  throw new UsageError(
    `NEXTAUTH_URL has the path ${url.pathname}, but the dashboard is built for ${basePath ? `the base path ${basePath}` : 'the root'}: set it to ${url.origin}${basePath}/api/auth${basePath ? '' : ` (or build for that path: leasehold dashboard build --base-path ${pathname})`}`,
  );
}

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

export function readMarker(dir: string): BuildMarker | null {
  try {
    const marker = JSON.parse(readFileSync(path.join(dir, MARKER), 'utf8')) as Partial<BuildMarker>;
    if (typeof marker.version !== 'string') return null;
    return { version: marker.version, node: marker.node, basePath: marker.basePath ?? '' };
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

/**
 * The embedded development server is migrated (it is the CLI's own); DATABASE_URL is only
 * checked: schema, version and the login's grants, each refusal a sentence (cli/dashboard-database.ts).
 */
async function checkDatabase(url: string, embedded: boolean, cwd: string): Promise<void> {
  if (embedded) await migrateDatabase(url);
  const { db, close } = createDb(url, { max: 1, applicationName: 'leasehold-cli' });
  try {
    const verdict = await checkDashboardDatabase(db, cwd);
    if (!embedded) for (const warning of verdict.warnings) console.error(`leasehold dashboard: warning: ${warning}`);
  } finally {
    await close();
  }
}

interface BuildContext {
  root: string;
  dir: string;
  version: string;
  basePath: string;
  env: NodeJS.ProcessEnv;
  next: string;
}

/** Copies and builds the dashboard into `dir` for `basePath`; false (and the reason said) when next build fails. */
function buildDashboard(b: BuildContext, why: string): boolean {
  const where = b.basePath ? `under the base path ${b.basePath}` : 'at the root path';
  console.error(
    `leasehold dashboard: building the dashboard for leasehold ${b.version} ${where} into ${b.dir} (${why}). next build takes minutes; later runs reuse the build…`,
  );
  const started = Date.now();
  rmSync(path.join(b.dir, MARKER), { force: true });
  copySources(b.root, b.dir, b.version);
  const linked = linkOwnDependencies(b.root, b.dir);
  if (linked.length > 0)
    console.error(`leasehold dashboard: the build uses Leasehold's own ${linked.join(', ')} (your project has others)`);
  const build = spawnSync(process.execPath, [b.next, 'build'], {
    cwd: b.dir,
    env: b.env,
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  if (build.status !== 0) {
    console.error(
      `leasehold dashboard: the build failed (next build exited ${build.status ?? build.signal}); its output is above`,
    );
    return false;
  }
  if (!existsSync(path.join(b.dir, '.next', 'BUILD_ID')))
    throw new Error(`Leasehold CLI: no build in ${b.dir}/.next after building`);
  const marker: BuildMarker = { version: b.version, node: process.version, basePath: b.basePath };
  writeFileSync(path.join(b.dir, MARKER), `${JSON.stringify(marker)}\n`);
  console.error(`leasehold dashboard: built in ${Math.round((Date.now() - started) / 1000)} s`);
  return true;
}

/** Why the build in `dir` does not serve `basePath` for this version, or null when it does. */
export function rebuildReason(
  marker: BuildMarker | null,
  dir: string,
  root: string,
  version: string,
  basePath: string,
): string | null {
  if (!marker || !existsSync(path.join(dir, '.next', 'BUILD_ID'))) return 'no build there yet';
  if (marker.version !== version) return `the build there is for leasehold ${marker.version}`;
  if (marker.basePath !== basePath)
    return `the build there is for ${marker.basePath ? `the base path ${marker.basePath}` : 'the root path'}`;
  if (buildIsStale(dir, root)) return 'the sources are newer than the build';
  return null;
}

export const dashboardCommand: Command = {
  name: 'dashboard',
  help: HELP,
  async run(args, context: CommandContext) {
    const { values, positionals } = parseCommandArgs('dashboard', args, OPTIONS, true);
    const [sub, ...extra] = positionals;
    if ((sub !== undefined && sub !== 'build') || extra.length > 0)
      throw new UsageError(
        `leasehold dashboard takes no argument but build, not ${JSON.stringify(positionals.join(' '))} (see leasehold dashboard --help)`,
      );
    const buildOnly = sub === 'build';
    const dir = path.resolve(
      context.cwd,
      values.dir ?? context.env.LEASEHOLD_DASHBOARD_DIR ?? path.join('.leasehold', 'dashboard'),
    );
    const root = packageRoot();
    if (dir === root || root.startsWith(`${dir}${path.sep}`))
      throw new UsageError(`--dir ${dir} holds the package itself; name a folder of its own`);
    const marker = readMarker(dir);
    const asked = values['base-path'] ?? context.env.LEASEHOLD_BASE_PATH;
    // Serving without a base path asked for serves the build as it was made (`build --base-path`).
    const basePath = asked !== undefined ? normalizeBasePath(asked) : buildOnly ? '' : (marker?.basePath ?? '');

    let port = 0;
    let hostname = '127.0.0.1';
    let nextAuthUrl: string | undefined;
    if (!buildOnly) {
      port = wholeNumber('port', values.port ?? context.env.PORT ?? '3000', 1, 65535)!;
      hostname = dashboardHostname(values.hostname, context.env);
      const secret = context.env.NEXTAUTH_SECRET ?? '';
      if (secret.length < 32)
        throw new UsageError(
          'NEXTAUTH_SECRET must be set to a random string of at least 32 characters (for example: openssl rand -base64 32); it signs the dashboard’s sessions',
        );
      nextAuthUrl = nextAuthUrlFor(context.env.NEXTAUTH_URL, basePath);
      // The server's own parser of its sign-in settings (single sign-on, built-in users,
      // redaction defaults): a half-configured sign-in stops here with its sentence, before any
      // build, instead of failing the first request.
      try {
        parseWebEnv({ ...context.env, DATABASE_URL: context.env.DATABASE_URL || 'embedded', LEASEHOLD_DEMO: 'false' });
      } catch (error) {
        throw new UsageError((error as Error).message.replace(/^Leasehold dashboard: /, ''));
      }
    }

    const database = buildOnly ? null : await commandDatabase(context, values.embedded === true);
    try {
      if (database) await checkDatabase(database.url, database.embedded, context.cwd);

      // Resolved from the build folder, as next build will: the user's project's node_modules.
      mkdirSync(dir, { recursive: true });
      const missing = missingPackages(dir);
      if (missing.length > 0)
        throw new UsageError(
          `the dashboard needs packages your project does not have: ${missing.join(', ')}. Install them: npm install ${DASHBOARD_PACKAGES.join(' ')}`,
        );
      const next = createRequire(path.join(dir, 'package.json')).resolve('next/dist/bin/next');
      const workspace = commonAncestor(dir, realpathSync(next));
      // NODE_ENV is left to next (build and start set production). next start reads
      // next.config.ts again, so the base path goes to both.
      const env: NodeJS.ProcessEnv = {
        ...process.env,
        ...context.env,
        ...(database ? { DATABASE_URL: database.url } : {}),
        ...(nextAuthUrl ? { NEXTAUTH_URL: nextAuthUrl } : {}),
        LEASEHOLD_DEMO: 'false',
        NEXT_TELEMETRY_DISABLED: '1',
        LEASEHOLD_DASHBOARD_ROOT: workspace,
        LEASEHOLD_BASE_PATH: basePath,
      };

      const reason = values.rebuild ? '--rebuild' : rebuildReason(marker, dir, root, context.version, basePath);
      if (reason) {
        if (!buildDashboard({ root, dir, version: context.version, basePath, env, next }, reason)) return 1;
      } else {
        console.error(
          `leasehold dashboard: using the build in ${dir} (leasehold ${context.version}, ${basePath ? `base path ${basePath}` : 'root path'}; --rebuild builds again)`,
        );
      }
      if (buildOnly) {
        console.error(
          `leasehold dashboard: ${dir} is ready; leasehold dashboard${values.dir ? ` --dir ${values.dir}` : ''} serves it${basePath ? ` under ${basePath} (NEXTAUTH_URL: https://<your host>${basePath}/api/auth)` : ''}`,
        );
        return 0;
      }

      const startArgs = [next, 'start', '--port', String(port), '--hostname', hostname];
      if (basePath) console.error(`leasehold dashboard: serving under ${basePath}/ on port ${port}`);
      const child = spawn(process.execPath, startArgs, { cwd: dir, env, stdio: ['ignore', 'inherit', 'inherit'] });
      const forward = (signal: NodeJS.Signals) => child.kill(signal);
      process.on('SIGINT', forward);
      process.on('SIGTERM', forward);
      const code = await new Promise<number>((resolve) => child.on('exit', (c, s) => resolve(c ?? (s ? 0 : 1))));
      process.off('SIGINT', forward);
      process.off('SIGTERM', forward);
      return code;
    } finally {
      await database?.stop();
    }
  },
};
