import 'server-only';
/**
 * The web process's settings, checked once. Outside demo mode the app refuses to run without
 * a real session secret.
 */
import { z } from 'zod';

const DEMO_SECRET = 'leasehold-demo-secret-not-for-production';

const schema = z.object({
  DATABASE_URL: z.string().min(1, 'DATABASE_URL is required (npm start and npm run dev set it for you)'),
  LEASEHOLD_DEMO: z.enum(['true', 'false', '1', '0', '']).optional(),
  NEXTAUTH_SECRET: z.string().optional(),
  LEASEHOLD_METRICS_TOKEN: z.string().optional(),
});

export interface WebEnv {
  databaseUrl: string;
  demo: boolean;
  secret: string;
  metricsToken: string | null;
}

let cached: WebEnv | null = null;

export function webEnv(): WebEnv {
  if (cached) return cached;
  const parsed = schema.safeParse(process.env);
  if (!parsed.success) throw new Error(`Leasehold dashboard: ${parsed.error.issues.map((i) => i.message).join('; ')}`);
  const e = parsed.data;
  const demo = e.LEASEHOLD_DEMO === 'true' || e.LEASEHOLD_DEMO === '1';
  const secret = e.NEXTAUTH_SECRET ?? (demo ? DEMO_SECRET : '');
  if (!demo && (secret.length < 32 || secret === DEMO_SECRET)) {
    throw new Error(
      'Leasehold dashboard: set NEXTAUTH_SECRET to a random string of at least 32 characters (outside demo mode)',
    );
  }
  cached = { databaseUrl: e.DATABASE_URL, demo, secret, metricsToken: e.LEASEHOLD_METRICS_TOKEN || null };
  return cached;
}
