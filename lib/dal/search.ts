import 'server-only';
/**
 * A payload search as the data-access layer resolves it (docs/dashboard.md, "Search"): the
 * filter's path and value checked, the kinds it runs in (the kind asked for, or every kind that
 * declares the path), each with its index ready, and, for a role that sees payloads masked, the
 * kind versions where the path is masked taken out: such a search answers as if nothing
 * matched, as an exact key search does (listableTo in jobs.ts). Not a DAL function of its own:
 * its callers (the list, the bulk preview, the export) have authorized already.
 */
import { redactionMatcher } from '../../db/queue/redaction-rules.ts';
import type { Job } from '../../db/queue/index.ts';
import { filterTime, type JobFilter, type PayloadSearch } from '../../db/queries/jobs.ts';
import { redactedPathsByVersion, searchableKinds } from '../../db/queries/kinds.ts';
import { database } from '../db.ts';
import { webEnv } from '../env.ts';
import { InputError } from '../errors.ts';
import { notSearchableMessage, SEARCH_REFUSALS, searchIndexNotReadyMessage } from '../present.ts';
import { permits } from './policy.ts';
import type { SessionUser } from './session.ts';

export interface ResolvedSearch {
  /** The payload search to run; undefined when the filter has no path. */
  search: PayloadSearch | undefined;
  /** Whether a row found must be left out for this viewer (its kind version masks the path). */
  hidden: (job: Job) => boolean;
}

/** Whether `rules` mask `path` or a key above it (masking `customer` masks `customer.email`). */
export function pathMasked(rules: readonly string[], path: string): boolean {
  const masked = redactionMatcher(rules);
  const keys = path.split('.');
  return keys.some((key, i) => masked(key, keys.slice(0, i + 1).join('.')));
}

/**
 * Checks the filter's search (the time range too) and resolves its kinds; bad input throws an
 * InputError with the sentence the page and the API say (nothing is read or written).
 */
export async function resolveSearch(user: SessionUser, filter: JobFilter): Promise<ResolvedSearch> {
  const from = filter.from === undefined ? null : filterTime(filter.from);
  const to = filter.to === undefined ? null : filterTime(filter.to);
  if (from && to && to < from) throw new InputError(SEARCH_REFUSALS.rangeBackwards);
  if (filter.path === undefined && filter.value !== undefined) throw new InputError(SEARCH_REFUSALS.valueWithoutPath);
  if (filter.path === undefined) return { search: undefined, hidden: () => false };
  if (filter.value === undefined) throw new InputError(SEARCH_REFUSALS.pathWithoutValue);
  const { path, value } = filter;
  const found = await searchableKinds(database(), path, filter.kind);
  if (found.length === 0) throw new InputError(notSearchableMessage(path, filter.kind));
  const unready = found.filter((k) => k.index !== 'ready');
  if (unready.length > 0) {
    throw new InputError(
      searchIndexNotReadyMessage(
        path,
        unready.map((k) => k.kind),
        unready.every((k) => k.index === 'building'),
      ),
    );
  }
  const kinds = found.map((k) => k.kind);
  if (permits(user, 'revealPayload')) return { search: { path, value, kinds }, hidden: () => false };
  // Masked for this role in a kind version: the version's declared and added paths, the
  // configured ones, the well-known secret keys. A version no worker registered is hidden whole.
  const versions = await redactedPathsByVersion(database(), kinds);
  const open = new Set(
    versions
      .filter((v) => !pathMasked([...v.paths, ...webEnv().redactPaths], path))
      .map((v) => `${v.version}:${v.kind}`),
  );
  const searched = kinds.filter((kind) => versions.some((v) => v.kind === kind && open.has(`${v.version}:${v.kind}`)));
  const openVersions = Object.fromEntries(
    searched.map((kind) => [
      kind,
      versions.filter((v) => v.kind === kind && open.has(`${v.version}:${v.kind}`)).map((v) => v.version),
    ]),
  );
  return {
    // The open versions go into the statement (a page's cursor counts only what may be shown);
    // `hidden` stays as a second check.
    search: { path, value, kinds: searched, versions: openVersions },
    hidden: (job) => !open.has(`${job.kindVersion}:${job.kind}`),
  };
}
