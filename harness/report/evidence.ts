/**
 * Evidence the step World attaches to a scenario so the report can classify it.
 *
 * Cucumber's own statuses cannot tell "passed because it checked something"
 * from "passed because no step asserted anything", nor "skipped because the
 * adapter lacks a capability" from "skipped because the harness could not
 * run it". These three attachments carry that difference through the message
 * stream, which stays the single source of results.
 */

/** How many assertions the scenario executed; attached once, in an After hook. */
export const ASSERTIONS_MEDIA_TYPE = 'application/vnd.synchro.assertions+json';
/** The adapter lacks a capability the scenario is tagged with; the Before hook then skips. */
export const NOT_APPLICABLE_MEDIA_TYPE = 'application/vnd.synchro.not-applicable+json';
/** The harness could not run the scenario at all; the Before hook then skips. */
export const UNDETERMINED_MEDIA_TYPE = 'application/vnd.synchro.undetermined+json';

/**
 * What the scenario started: whether it opened a server and how many client
 * adapter processes it spawned (restarts included). Not a verdict: the cost
 * benchmark (bench/suite) reads it to tell server scenarios from client ones.
 */
export const RESOURCES_MEDIA_TYPE = 'application/vnd.synchro.resources+json';

export interface ResourcesEvidence {
  server: boolean;
  /** Milliseconds the scenario waited for its server to be handed over, when it used one. */
  serverWaitMs: number | null;
  clientProcesses: number;
}

export function resourcesEvidence(resources: ResourcesEvidence): Evidence {
  return { body: JSON.stringify(resources), mediaType: RESOURCES_MEDIA_TYPE };
}

export interface Evidence {
  body: string;
  mediaType: string;
}

export interface AssertionsEvidence {
  count: number;
  /** Then steps that passed without executing an assertion (each makes the scenario undetermined). */
  unasserted: string[];
}

export interface NotApplicableEvidence {
  capability: string;
  reason: string;
}

export interface UndeterminedEvidence {
  reason: string;
}

export function assertionsEvidence(count: number, unasserted: readonly string[] = []): Evidence {
  if (!Number.isInteger(count) || count < 0) {
    throw new RangeError(`assertion count must be a non-negative integer, got ${count}`);
  }
  const body: AssertionsEvidence = { count, unasserted: [...unasserted] };
  return { body: JSON.stringify(body), mediaType: ASSERTIONS_MEDIA_TYPE };
}

export function notApplicableEvidence(capability: string, reason: string): Evidence {
  const body: NotApplicableEvidence = { capability, reason };
  return { body: JSON.stringify(body), mediaType: NOT_APPLICABLE_MEDIA_TYPE };
}

export function undeterminedEvidence(reason: string): Evidence {
  const body: UndeterminedEvidence = { reason };
  return { body: JSON.stringify(body), mediaType: UNDETERMINED_MEDIA_TYPE };
}

/**
 * Reads an evidence body back. Returns undefined for a body that does not have
 * the expected shape, so a malformed attachment counts as missing evidence
 * (which can only make a scenario less than passed, never more).
 */
export function parseAssertions(body: string): AssertionsEvidence | undefined {
  const value = parseObject(body);
  const count = value?.count;
  const unasserted = Array.isArray(value?.unasserted) ? value.unasserted.filter((text): text is string => typeof text === 'string') : [];
  return typeof count === 'number' && Number.isInteger(count) && count >= 0 ? { count, unasserted } : undefined;
}

export function parseNotApplicable(body: string): NotApplicableEvidence | undefined {
  const value = parseObject(body);
  if (value === undefined || typeof value.capability !== 'string') return undefined;
  const reason = typeof value.reason === 'string' ? value.reason : '';
  return { capability: value.capability, reason };
}

export function parseUndetermined(body: string): UndeterminedEvidence | undefined {
  const value = parseObject(body);
  if (value === undefined) return undefined;
  return { reason: typeof value.reason === 'string' ? value.reason : '' };
}

function parseObject(body: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(body);
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}
