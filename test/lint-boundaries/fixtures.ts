/**
 * One source file per import boundary arrow, for test/lint-boundaries.test.ts: each is written
 * at `file` in a scratch copy of the tree (never in the real one) and linted there with the
 * repo's oxlint config. The sources are strings so that nothing here is linted or typechecked
 * as code of the real tree.
 */

export interface Fixture {
  /** Where the file sits, relative to the root: the folder (and depth) decides the rules. */
  file: string;
  /** The module specifier under test. */
  from: string;
  /** Source instead of `import { x } from '<from>'; export const y = x;`. */
  source?: string;
}

export interface Arrow {
  name: string;
  /** Every fixture must fail with no-restricted-imports, its help naming the boundary. */
  forbidden: Fixture[];
  /** Text the boundary's message must contain. */
  message: string;
}

export const sourceOf = (f: Fixture) => f.source ?? `import { x } from '${f.from}';\nexport const y = x;\n`;

const sideEffect = (from: string) => `import '${from}';\n`;

export const FORBIDDEN: Arrow[] = [
  {
    name: 'components -> lib/dal',
    message: 'components/ may import only components/, lib/dto and lib/time-format',
    forbidden: [
      { file: 'components/job-table.tsx', from: '../lib/dal' },
      { file: 'components/job-table.tsx', from: '@/lib/dal' },
      { file: 'components/charts/line.tsx', from: '../../lib/env' },
    ],
  },
  {
    name: 'components -> db',
    message: 'components/ may import only components/, lib/dto and lib/time-format',
    forbidden: [
      { file: 'components/job-table.tsx', from: '../db/schema' },
      { file: 'components/job-table.tsx', from: '@/db/schema' },
      { file: 'components/charts/line.tsx', from: '../../db/queries/overview' },
      { file: 'components/job-table.tsx', from: './../db' },
    ],
  },
  {
    name: 'components -> pg, drizzle-orm',
    message: 'components/ must not import pg, drizzle-orm',
    forbidden: [
      { file: 'components/job-table.tsx', from: 'pg' },
      { file: 'components/job-table.tsx', from: 'drizzle-orm/pg-core' },
    ],
  },
  {
    name: 'app -> db',
    message: 'app/ may import only app/, components/ and lib/',
    forbidden: [
      { file: 'app/(console)/jobs/page.tsx', from: '../../../db/schema' },
      { file: 'app/(console)/jobs/page.tsx', from: '@/db/schema' },
      { file: 'app/api/jobs/[id]/cancel/route.ts', from: '../../../../../db/queue' },
      { file: 'app/layout.tsx', from: '@/db/queries/jobs' },
    ],
  },
  {
    name: 'app -> workers',
    message: 'app/ may import only app/, components/ and lib/',
    forbidden: [
      { file: 'app/api/metrics/route.ts', from: '../../../workers/metrics' },
      { file: 'app/api/metrics/route.ts', from: '@/workers/metrics' },
      // The dashboard learns kinds from leasehold.kinds (lib/dal/kinds.ts), never from handler code.
      { file: 'app/(console)/kinds/page.tsx', from: '../../../workers/handler-files' },
      { file: 'app/(console)/jobs/[id]/page.tsx', from: '@/workers/handler' },
    ],
  },
  {
    name: 'app -> scripts',
    message: 'app/ may import only app/, components/ and lib/',
    forbidden: [
      { file: 'app/login/page.tsx', from: '../../scripts/build-state' },
      { file: 'app/login/page.tsx', from: '@/scripts/build-state' },
      { file: 'app/api/metrics/route.ts', from: '../../../scripts/lint-boundaries' },
    ],
  },
  {
    name: 'app -> pg, drizzle-orm',
    message: 'app/ must not import pg, drizzle-orm',
    forbidden: [
      { file: 'app/api/overview/route.ts', from: 'drizzle-orm' },
      { file: 'app/api/overview/route.ts', from: 'pg' },
    ],
  },
  {
    name: 'lib -> app',
    message: 'lib/ may import only lib/ and db/',
    forbidden: [
      { file: 'lib/dal/jobs.ts', from: '../../app/(console)/layout' },
      { file: 'lib/dal/jobs.ts', from: '@/app/(console)/layout' },
    ],
  },
  {
    name: 'lib -> components',
    message: 'lib/ may import only lib/ and db/',
    forbidden: [
      { file: 'lib/page.ts', from: '../components/page-error' },
      { file: 'lib/page.ts', from: '@/components/page-error' },
    ],
  },
  {
    name: 'lib -> workers, scripts, test',
    message: 'lib/ may import only lib/ and db/',
    forbidden: [
      { file: 'lib/env.ts', from: '../workers/config' },
      { file: 'lib/env.ts', from: '@/scripts/build-state' },
      // Redaction reads the kinds registry; loading handlers in the web process is refused.
      { file: 'lib/dal/jobs.ts', from: '../../workers/handler-files' },
      { file: 'lib/redaction.ts', from: '../workers/handler' },
      { file: 'lib/dal/kinds.ts', from: '@/workers/handler' },
      // test/ only from lib's tests.
      { file: 'lib/dal/jobs.ts', from: '../../test/db' },
    ],
  },
  {
    name: 'workers -> lib',
    message: 'workers/ may import only workers/ and db/',
    forbidden: [
      { file: 'workers/worker.ts', from: '../lib/db' },
      { file: 'workers/worker.ts', from: '@/lib/db' },
      { file: 'workers/services/reaper.ts', from: '../../lib/redaction' },
    ],
  },
  {
    name: 'workers -> app',
    message: 'workers/ may import only workers/ and db/',
    forbidden: [
      { file: 'workers/metrics.ts', from: '../app/api/metrics/route' },
      { file: 'workers/metrics.ts', from: '@/app/api/metrics/route' },
    ],
  },
  {
    name: 'workers -> scripts',
    message: 'workers/ may import only workers/ and db/',
    forbidden: [
      { file: 'workers/main.ts', from: '../scripts/build-state' },
      { file: 'workers/main.ts', from: '@/scripts/build-state' },
    ],
  },
  {
    name: 'workers -> test (outside *.test.ts)',
    message: 'workers/ may import only workers/ and db/',
    forbidden: [
      { file: 'workers/worker.ts', from: '../test/db' },
      { file: 'workers/worker.ts', from: '@/test/db' },
    ],
  },
  {
    name: 'workers -> next, react, server-only',
    message: 'workers/ must not import next, next-auth, react, react-dom, server-only',
    forbidden: [
      { file: 'workers/worker.ts', from: 'next/server' },
      { file: 'workers/worker.ts', from: 'next' },
      { file: 'workers/services/reaper.ts', from: 'next-auth' },
      { file: 'workers/services/reaper.ts', from: 'react' },
      { file: 'workers/services/reaper.ts', from: 'react-dom/server' },
      { file: 'workers/main.ts', from: 'server-only', source: sideEffect('server-only') },
    ],
  },
  {
    name: 'demo -> db, workers, entry (Leasehold only by the package names)',
    message: 'demo/ may import only demo/ and cli/database-select',
    forbidden: [
      { file: 'demo/orders.ts', from: '../db/queue' },
      { file: 'demo/orders.ts', from: '@/db/client' },
      { file: 'demo/orders.ts', from: './../db/migrate' },
      { file: 'demo/handlers.ts', from: '../workers/errors' },
      { file: 'demo/handlers.ts', from: '@/workers/handler' },
      { file: 'demo/handlers.ts', from: '../entry/worker' },
      { file: 'demo/jobs.ts', from: '@/entry/index' },
      { file: 'demo/orders.ts', from: '../test/db' },
    ],
  },
  {
    name: 'db -> lib',
    message: 'db/ may import only db/',
    forbidden: [
      { file: 'db/queue/claim.ts', from: '../../lib/dal' },
      { file: 'db/queue/claim.ts', from: '@/lib/dal' },
      { file: 'db/schema.ts', from: '../lib/dto' },
    ],
  },
  {
    name: 'db -> workers',
    message: 'db/ may import only db/',
    forbidden: [
      { file: 'db/queue/executor.ts', from: '../../workers/config' },
      { file: 'db/queue/executor.ts', from: '@/workers/config' },
      { file: 'db/client.ts', from: '../workers/worker' },
    ],
  },
  {
    name: 'db -> app, components, scripts, test (outside *.test.ts)',
    message: 'db/ may import only db/',
    forbidden: [
      { file: 'db/queries/jobs.ts', from: '../../app/(console)/jobs/page' },
      { file: 'db/queries/jobs.ts', from: '@/components/state-badge' },
      { file: 'db/migrate/index.ts', from: '../../scripts/build-state' },
      { file: 'db/queue/claim.ts', from: '../../test/db' },
      { file: 'db/queue/claim.ts', from: '@/test/factories' },
    ],
  },
  {
    name: 'db -> server-only, react, next',
    message: 'db/ must not import next, next-auth, react, react-dom, server-only',
    forbidden: [
      { file: 'db/client.ts', from: 'server-only', source: sideEffect('server-only') },
      { file: 'db/queue/operator.ts', from: 'react' },
      { file: 'db/queue/operator.ts', from: 'react/jsx-runtime' },
      { file: 'db/users.ts', from: 'next-auth/providers/credentials' },
      { file: 'db/users.ts', from: 'next/cache' },
    ],
  },
  // Product code never reaches into scripts/ (npm entry points and tooling, not shipped): what
  // the CLI and the demo need from there lives in cli/ (database-select.ts, build-state.ts).
  {
    name: 'components -> scripts',
    message: 'components/ may import only components/, lib/dto and lib/time-format',
    forbidden: [
      { file: 'components/overview.tsx', from: '../scripts/build-state' },
      { file: 'components/charts/line.tsx', from: '@/scripts/lint-boundaries' },
    ],
  },
  {
    name: 'db -> scripts',
    message: 'db/ may import only db/',
    forbidden: [
      { file: 'db/migrate/files.ts', from: '@/scripts/check-migrations' },
      { file: 'db/queue/claim.test.ts', from: '../../scripts/start' },
    ],
  },
  {
    name: 'cli -> scripts',
    message: 'cli/ may import only cli/, db/, workers/, lib/settings and lib/time-format',
    forbidden: [
      { file: 'cli/workers.ts', from: '../scripts/database' },
      { file: 'cli/dashboard.ts', from: '../scripts/build-state.ts' },
      { file: 'cli/run.ts', from: '@/scripts/database' },
    ],
  },
  {
    // lib/time-format opens lib/ to the CLI and the components by that one module only.
    name: 'cli, components -> the rest of lib',
    message: 'may import only',
    forbidden: [
      { file: 'cli/jobs.ts', from: '../lib/present' },
      { file: 'cli/jobs.ts', from: '../lib/time-format-extra' },
      { file: 'components/time.tsx', from: '../lib/present.ts' },
    ],
  },
  {
    name: 'cli -> scripts (in *.test.ts too)',
    message: 'cli/ may import only cli/, db/, workers/, lib/settings, lib/time-format and test/',
    forbidden: [{ file: 'cli/workers.test.ts', from: '../scripts/workers' }],
  },
  {
    name: 'entry -> scripts',
    message: 'entry/ may import only entry/, db/, workers/ and testing/',
    forbidden: [
      { file: 'entry/index.ts', from: '../scripts/database' },
      { file: 'entry/worker.ts', from: '@/scripts/demo-handlers' },
    ],
  },
  {
    name: 'testing -> scripts',
    message: 'testing/ may import only testing/, db/ and workers/',
    forbidden: [
      { file: 'testing/database.ts', from: '../scripts/database' },
      { file: 'testing/run.ts', from: '@/scripts/database' },
    ],
  },
  {
    name: 'demo -> scripts',
    message: 'demo/ may import only demo/ and cli/database-select',
    forbidden: [
      { file: 'demo/orders.ts', from: '../scripts/database' },
      { file: 'demo/orders.ts', from: '@/scripts/database' },
    ],
  },
  {
    name: 'demo -> scripts (in *.test.ts too)',
    message: 'demo/ may import only demo/, cli/database-select and test/',
    forbidden: [{ file: 'demo/handlers.test.ts', from: '../scripts/demo-handlers' }],
  },
  {
    name: 'demo -> the rest of cli/',
    message: 'demo/ may import only demo/ and cli/database-select',
    forbidden: [
      { file: 'demo/orders.ts', from: '../cli/database' },
      { file: 'demo/orders.ts', from: '../cli/run' },
    ],
  },
  {
    name: 'a file deeper than the table covers',
    message: 'no patterns for files this deep in components/',
    forbidden: [{ file: 'components/a/b/c/d.tsx', from: 'react' }],
  },
];

/** Imports each folder may make: every file must lint clean (exit 0). */
export const ALLOWED: { folder: string; fixtures: Fixture[] }[] = [
  {
    folder: 'components',
    fixtures: [
      { file: 'components/bulk-actions.tsx', from: '../lib/dto' },
      { file: 'components/bulk-actions.tsx', from: '@/lib/dto' },
      { file: 'components/charts/line.tsx', from: '../../lib/dto' },
      // The deepest files the table has exact patterns for (components/ maxDepth 3).
      { file: 'components/charts/axes/ticks.tsx', from: '../../../lib/dto' },
      { file: 'components/overview.tsx', from: './state-badge' },
      { file: 'components/overview.tsx', from: '@/components/state-badge' },
      { file: 'components/charts/line.tsx', from: '../state-badge' },
      // components/charts/db/, not the root db/.
      { file: 'components/charts/line.tsx', from: '../db/colors' },
      { file: 'components/overview.tsx', from: 'recharts' },
      { file: 'components/overview.tsx', from: 'react' },
      // The one wording of times (pure), beside the DTOs.
      { file: 'components/time.tsx', from: '../lib/time-format' },
      { file: 'components/charts/line.tsx', from: '@/lib/time-format.ts' },
    ],
  },
  {
    folder: 'app',
    fixtures: [
      { file: 'app/(console)/jobs/page.tsx', from: '../../../lib/dal' },
      { file: 'app/(console)/jobs/page.tsx', from: '@/lib/dal' },
      { file: 'app/(console)/jobs/[id]/page.tsx', from: '../../../../components/state-badge' },
      { file: 'app/(console)/jobs/[id]/page.tsx', from: '@/components/job-actions' },
      { file: 'app/api/jobs/[id]/cancel/route.ts', from: '../../../../../lib/http' },
      { file: 'app/api/auth/[...nextauth]/route.ts', from: '@/app/api/shared' },
      // app/(console)/db/ and app/(console)/workers/: folders of app/, whatever their names.
      { file: 'app/(console)/jobs/page.tsx', from: '../db/columns' },
      { file: 'app/(console)/jobs/page.tsx', from: '../workers/table' },
      { file: 'app/layout.tsx', from: 'next-auth' },
    ],
  },
  {
    folder: 'lib',
    fixtures: [
      { file: 'lib/dal/jobs.ts', from: '../../db/queue' },
      { file: 'lib/dal/jobs.ts', from: '@/db/queue' },
      { file: 'lib/dto.ts', from: '../db/queries/jobs' },
      { file: 'lib/auth.ts', from: './env' },
      { file: 'lib/dal/policy.test.ts', from: '../../test/db' },
      { file: 'lib/dal/policy.test.ts', from: '@/test/factories' },
      { file: 'lib/auth.ts', from: '@/lib/env' },
      { file: 'lib/http.ts', from: 'next/server' },
      { file: 'lib/db.ts', from: 'server-only', source: sideEffect('server-only') },
    ],
  },
  {
    folder: 'workers',
    fixtures: [
      { file: 'workers/worker.ts', from: '../db/client' },
      { file: 'workers/worker.ts', from: '@/db/client' },
      { file: 'workers/services/reaper.ts', from: '../handler' },
      { file: 'workers/services/reaper.ts', from: '@/workers/errors' },
      { file: 'workers/services/reaper.ts', from: '../../db/queue' },
      // workers/lib/, not the root lib/.
      { file: 'workers/services/reaper.ts', from: '../lib/retry' },
      { file: 'workers/worker.test.ts', from: '../test/db' },
      { file: 'workers/worker.test.ts', from: '@/test/wait' },
      { file: 'workers/services/reaper.test.ts', from: '../../test/factories' },
      { file: 'workers/main.ts', from: 'pino' },
    ],
  },
  {
    folder: 'db',
    fixtures: [
      { file: 'db/queue/claim.ts', from: '../schema' },
      { file: 'db/queue/claim.ts', from: '@/db/schema' },
      { file: 'db/queue/claim.ts', from: './validate' },
      { file: 'db/queries/jobs.ts', from: '../queue/history' },
      { file: 'db/client.ts', from: './schema' },
      { file: 'db/queue/claim.test.ts', from: '../../test/db' },
      { file: 'db/queue/claim.test.ts', from: '@/test/factories' },
      { file: 'db/migrate/index.test.ts', from: '../../test/db' },
      { file: 'db/client.ts', from: 'drizzle-orm/node-postgres' },
      { file: 'db/client.ts', from: 'pg' },
    ],
  },
  {
    folder: 'cli',
    fixtures: [
      // What the CLI used to take from scripts/ is its own now.
      { file: 'cli/workers.ts', from: './database-url' },
      { file: 'cli/dashboard.ts', from: './build-state.ts' },
      { file: 'cli/database.ts', from: '../db/migrate/index.ts' },
      { file: 'cli/workers.ts', from: '@/workers/config' },
      { file: 'cli/dashboard.ts', from: '../lib/settings' },
      { file: 'cli/jobs.ts', from: '../lib/time-format.ts' },
      { file: 'cli/database-select.test.ts', from: '../test/scratch-database' },
    ],
  },
  {
    folder: 'demo',
    fixtures: [
      // Leasehold by the package's names, as a user's code imports it (tsconfig paths here).
      { file: 'demo/orders.ts', from: 'leasehold' },
      { file: 'demo/handlers.ts', from: 'leasehold/worker' },
      { file: 'demo/handlers.test.ts', from: 'leasehold/testing' },
      { file: 'demo/orders.ts', from: './jobs' },
      { file: 'demo/orders.ts', from: '@/demo/schema' },
      { file: 'demo/orders.ts', from: '../cli/database-select' },
      { file: 'demo/orders.ts', from: '../cli/database-select.ts' },
      { file: 'demo/handlers.test.ts', from: '../test/wait' },
      { file: 'demo/orders.ts', from: 'pg' },
      { file: 'demo/orders.ts', from: 'drizzle-orm/node-postgres' },
    ],
  },
];
