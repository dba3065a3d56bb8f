import 'server-only';
/**
 * The web process's settings (lib/settings.ts), read from process.env once, at run time on the
 * server: never inlined by the build, so one build serves every deployment's sign-in. The
 * first request of a misconfigured server fails with the sentence saying what to fix.
 */
import { parseWebEnv, type WebEnv } from './settings.ts';

export type { OidcEnv, WebEnv } from './settings.ts';

let cached: WebEnv | null = null;

export function webEnv(): WebEnv {
  cached ??= parseWebEnv(process.env);
  return cached;
}
