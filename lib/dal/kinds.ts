import 'server-only';
/**
 * The kinds registry as the dashboard sees it, and the redaction rules every read applies: the
 * paths a kind version's workers declared (the floor: nothing in the dashboard removes them),
 * the paths admins added for the kind (audited, and the only ones an admin may remove), and the
 * configured defaults for every kind (LEASEHOLD_REDACT_PATHS). db/queue writes each change's
 * audit row in the same statement as the change.
 */
import { z } from 'zod';
import {
  addRedactedPath,
  addSearchPath,
  redactedPathSchema,
  removeAddedRedactedPath,
  removeSearchPath,
  searchPathSchema,
} from '../../db/queue/index.ts';
import { nameSchema } from '../../db/queue/validate.ts';
import { listKinds, redactedPathsOf } from '../../db/queries/kinds.ts';
import type { Executor } from '../../db/queue/executor.ts';
import { database } from '../db.ts';
import type { ActionResultDTO, KindsDTO } from '../dto.ts';
import { webEnv } from '../env.ts';
import {
  addRedactionMessage,
  addSearchPathMessage,
  removeRedactionMessage,
  removeSearchPathMessage,
} from '../present.ts';
import { parse, reasonSchema } from './input.ts';
import { invalidateLive, liveQuery, type LiveRead } from '../live-cache.ts';
import { authorize, permits } from './policy.ts';

/** The kinds registry, the same for every role (only `can` is the viewer's). */
const kindsRead = liveQuery('kinds', () => listKinds(database()));

/**
 * Every path masked in a job of this kind version: declared, admin-added and configured; null
 * when no worker has registered the version (its payload is hidden whole). Not a DAL function
 * of its own: the callers (job detail) have authorized already.
 */
export async function redactionRulesFor(executor: Executor, kind: string, version: number): Promise<string[] | null> {
  const paths = await redactedPathsOf(executor, kind, version);
  return paths === null ? null : [...new Set([...paths, ...webEnv().redactPaths])];
}

export async function getKinds({ fresh = false }: LiveRead = {}): Promise<KindsDTO> {
  const user = await authorize('getKinds');
  const kinds = await (fresh ? kindsRead.refresh() : kindsRead.read());
  return {
    kinds: kinds.map((k) => ({
      ...k,
      firstSeenAt: k.firstSeenAt.toISOString(),
      lastSeenAt: k.lastSeenAt.toISOString(),
    })),
    defaultPaths: webEnv().redactPaths,
    can: {
      editRedaction: permits(user, 'addKindRedaction') && permits(user, 'removeKindRedaction'),
      editSearch: permits(user, 'addKindSearchPath') && permits(user, 'removeKindSearchPath'),
    },
  };
}

const pathInput = z.strictObject({
  kind: nameSchema,
  path: redactedPathSchema,
  reason: reasonSchema.optional(),
});

/** Admin: masks one more path in every version of a kind (audited). */
export async function addKindRedaction(input: unknown): Promise<ActionResultDTO> {
  const user = await authorize('addKindRedaction');
  const { kind, path, reason } = parse(pathInput, input, 'redaction');
  const outcome = await addRedactedPath(database(), { kind, path, actor: user.email, ...(reason ? { reason } : {}) });
  // A path masked now is masked in the next poll of every page, not after the cache's freshness.
  invalidateLive('kinds', 'jobLive', 'failures');
  return { ok: outcome.applied, message: addRedactionMessage(kind, path, outcome) };
}

/** Admin: unmasks a path an admin added (audited); a path the workers declared stays. */
export async function removeKindRedaction(input: unknown): Promise<ActionResultDTO> {
  const user = await authorize('removeKindRedaction');
  const { kind, path, reason } = parse(pathInput, input, 'redaction');
  const outcome = await removeAddedRedactedPath(database(), {
    kind,
    path,
    actor: user.email,
    ...(reason ? { reason } : {}),
  });
  invalidateLive('kinds', 'jobLive', 'failures');
  return { ok: outcome.applied, message: removeRedactionMessage(kind, path, outcome) };
}

const searchPathInput = z.strictObject({
  kind: nameSchema,
  path: searchPathSchema,
  reason: reasonSchema.optional(),
});

/** Admin: makes one more payload path searchable in every version of a kind (audited); its index comes with `leasehold search-index`. */
export async function addKindSearchPath(input: unknown): Promise<ActionResultDTO> {
  const user = await authorize('addKindSearchPath');
  const { kind, path, reason } = parse(searchPathInput, input, 'searchable path');
  const outcome = await addSearchPath(database(), { kind, path, actor: user.email, ...(reason ? { reason } : {}) });
  invalidateLive('kinds');
  return { ok: outcome.applied, message: addSearchPathMessage(kind, path, outcome) };
}

/** Admin: removes a searchable path an admin added (audited); a path the handlers declare stays. */
export async function removeKindSearchPath(input: unknown): Promise<ActionResultDTO> {
  const user = await authorize('removeKindSearchPath');
  const { kind, path, reason } = parse(searchPathInput, input, 'searchable path');
  const outcome = await removeSearchPath(database(), { kind, path, actor: user.email, ...(reason ? { reason } : {}) });
  invalidateLive('kinds');
  return { ok: outcome.applied, message: removeSearchPathMessage(kind, path, outcome) };
}
