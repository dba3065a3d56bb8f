/**
 * The path prefix the dashboard was built for ('' at the root; `/leasehold` after `leasehold
 * dashboard build --base-path /leasehold`), baked in at build time by next.config.ts.
 *
 * next/link, useRouter() and redirect() add it themselves; everything else that names one of
 * the dashboard's own URLs (fetch of /api/…, a plain <a href>, next-auth's client and its
 * callback URLs) goes through withBasePath, or the browser leaves the prefix the proxy serves.
 */
export const BASE_PATH: string = process.env.NEXT_PUBLIC_LEASEHOLD_BASE_PATH ?? '';

/** `path` (absolute, from the dashboard's root: `/api/overview`) under the base path. */
export function withBasePath(path: string): string {
  return `${BASE_PATH}${path}`;
}
