import 'server-only';
/**
 * The kinds registry as the dashboard sees it: the kind versions workers registered, and the
 * admin action that sets one's redacted paths (the only way to remove a path; db/queue writes
 * its audit row in the same statement).
 */
import { z } from 'zod';
import { redactedPathsSchema, setRedactedPaths } from '../../db/queue/index.ts';
import { nameSchema } from '../../db/queue/validate.ts';
import { listKinds } from '../../db/queries/kinds.ts';
import { database } from '../db.ts';
import type { ActionResultDTO, KindsDTO } from '../dto.ts';
import { redactionOutcomeMessage } from '../present.ts';
import { parse, reasonSchema } from './input.ts';
import { authorize, permits } from './policy.ts';

export async function getKinds(): Promise<KindsDTO> {
  const user = await authorize('getKinds');
  const kinds = await listKinds(database());
  return {
    kinds: kinds.map((k) => ({
      ...k,
      firstSeenAt: k.firstSeenAt.toISOString(),
      lastSeenAt: k.lastSeenAt.toISOString(),
    })),
    can: { editRedaction: permits(user, 'setKindRedaction') },
  };
}

const redactionInput = z.strictObject({
  kind: nameSchema,
  version: z.int().min(1).max(1_000_000),
  paths: redactedPathsSchema,
  reason: reasonSchema.optional(),
});

/** Admin: sets a kind version's redacted paths to exactly the given ones (audited). */
export async function setKindRedaction(input: unknown): Promise<ActionResultDTO> {
  const user = await authorize('setKindRedaction');
  const { kind, version, paths, reason } = parse(redactionInput, input, 'redaction');
  const outcome = await setRedactedPaths(database(), {
    kind,
    version,
    paths,
    actor: user.email,
    ...(reason ? { reason } : {}),
  });
  return { ok: outcome.applied, message: redactionOutcomeMessage(kind, version, outcome) };
}
