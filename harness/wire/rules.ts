/**
 * Cross-field rules of the wire protocol (wire-protocol.md section 6) that a
 * JSON Schema cannot state, and `checkMessage`, which runs a kind's schema and
 * then its rules. Rules run only on schema-valid messages, so each may rely on
 * the generated types. A rule that needs facts the caller did not supply
 * (previous state, the request, HTTP status, a digest function) is listed in
 * `skipped` instead of passing silently.
 */
import { readJsonBody } from '../codec/index.ts';
import type { SchemaManifest } from './generated.ts';
import * as connect from './rules/connect.ts';
import type { RuleContext, Violation } from './rules/context.ts';
import * as errors from './rules/errors.ts';
import { MANIFEST_RULES } from './rules/manifest.ts';
import * as operator from './rules/operator.ts';
import * as pull from './rules/pull.ts';
import * as push from './rules/push.ts';
import * as rebuild from './rules/rebuild.ts';
import * as rows from './rules/rows.ts';
import type { SchemaError } from './validate.ts';
import { validate, WIRE_KINDS, type WireKind } from './validate.ts';

export type { RowDigestFn, RuleContext, Violation } from './rules/context.ts';

export interface WireRule {
  id: string;
  name: string;
  kinds: readonly WireKind[];
  /** Violations found, or undefined when the rule's context is missing. */
  check: (value: never, ctx: RuleContext, kind: WireKind) => Violation[] | undefined;
}

type Check<T> = (value: T, ctx: RuleContext, kind: WireKind) => Violation[] | undefined;

function rule<T>(id: string, name: string, kinds: readonly WireKind[], check: Check<T>): WireRule {
  return { id, name, kinds, check: check as WireRule['check'] };
}

const ROW_KINDS = ['push-request', 'push-response', 'pull-response', 'rebuild-response'] as const;
const MANIFEST_AT: Partial<Record<WireKind, (value: never) => SchemaManifest | undefined>> = {
  'schema-manifest': (m: SchemaManifest) => m,
  'schema-response': (r: { manifest: SchemaManifest }) => r.manifest,
  'connect-response': (r: { schema_definition?: SchemaManifest }) => r.schema_definition,
};
const MANIFEST_POINTER: Partial<Record<WireKind, string>> = {
  'schema-manifest': '',
  'schema-response': '/manifest',
  'connect-response': '/schema_definition',
};

export const RULES: readonly WireRule[] = [
  rule('N1', 'numberTokensCanonical', WIRE_KINDS, (_v: unknown, ctx) => rows.numberTokensCanonical(ctx)),
  rule('G3', 'primaryKeyMatchesManifest', ROW_KINDS, (v: unknown, ctx, kind) => rows.primaryKeyMatchesManifest(rows.keyedItems(kind, v, ctx), ctx)),
  rule('G4', 'rowMatchesManifest', ROW_KINDS, (v: unknown, ctx, kind) => rows.rowMatchesManifest(rows.keyedItems(kind, v, ctx), ctx)),
  rule('G5', 'rowChecksumVerifies', ['push-response', 'pull-response', 'rebuild-response'], (v: unknown, ctx, kind) => rows.rowChecksumVerifies(rows.keyedItems(kind, v, ctx), ctx)),
  rule('C2', 'sentinelMeansFreshClient', ['connect-request'], connect.sentinelMeansFreshClient),
  rule('C3', 'schemaResetNeedsContinuingClient', ['connect-request'], connect.schemaResetNeedsContinuingClient),
  rule('CR1', 'manifestPresentExactlyWhenReplacing', ['connect-response'], connect.manifestPresentExactlyWhenReplacing),
  rule('CR2', 'affectedScopesExactlyForRebuildLocal', ['connect-response'], connect.affectedScopesExactlyForRebuildLocal),
  rule('CR4', 'manifestMatchesDescriptor', ['connect-response'], connect.manifestMatchesDescriptor),
  rule('CR5', 'connectScopeDeltaConsistent', ['connect-response'], connect.connectScopeDeltaConsistent),
  rule('CR6', 'cursorUpdatesOnlyForKeptScopes', ['connect-response'], connect.cursorUpdatesOnlyForKeptScopes),
  rule('CR7', 'seededCursorsNeedReceipts', ['connect-response'], connect.seededCursorsNeedReceipts),
  rule('CR8', 'connectScopeSetVersionStep', ['connect-response'], connect.connectScopeSetVersionStep),
  ...MANIFEST_RULES.map(({ id, check }) =>
    rule(id, check.name, ['schema-manifest', 'schema-response', 'connect-response'], (v: never, _ctx, kind) => {
      const manifest = MANIFEST_AT[kind]?.(v);
      return manifest === undefined ? [] : check(manifest, MANIFEST_POINTER[kind] ?? '');
    }),
  ),
  rule('P1', 'mutationIdsUnique', ['push-request'], push.mutationIdsUnique),
  rule('P6', 'atomicKeysUnique', ['push-request'], push.atomicKeysUnique),
  rule('P7', 'pushWithinOctetLimits', ['push-request'], push.pushWithinOctetLimits),
  rule('P8', 'sealedRetryUnchanged', ['push-request'], push.sealedRetryUnchanged),
  rule('PR1', 'batchIdEchoed', ['push-response'], push.batchIdEchoed),
  rule('PR2', 'outcomePartitionMatchesRequest', ['push-response'], push.outcomePartitionMatchesRequest),
  rule('PR6', 'incompatibleFieldIdsSorted', ['push-response'], push.incompatibleFieldIdsSorted),
  rule('PR7', 'atomicResponseAllOrNothing', ['push-response'], push.atomicResponseAllOrNothing),
  rule('PR8', 'noAtomicRejectionWithoutAtomic', ['push-response'], push.noAtomicRejectionWithoutAtomic),
  rule('PR9', 'firstExecutionBindsRequestSchema', ['push-response'], push.firstExecutionBindsRequestSchema),
  rule('PR10', 'replayIdentical', ['push-response'], (_v: unknown, ctx) => push.replayIdentical('PR10', ctx)),
  rule('L2', 'scopeSetVersionNotAhead', ['pull-request'], pull.scopeSetVersionNotAhead),
  rule('L3', 'scopesEverAssigned', ['pull-request'], pull.scopesEverAssigned),
  rule('LR1', 'noChecksumsWhileMore', ['pull-response'], pull.noChecksumsWhileMore),
  rule('LR2', 'checksumsOnTerminalPage', ['pull-response'], pull.checksumsOnTerminalPage),
  rule('LR3', 'terminalChecksumKeysMatchActiveSet', ['pull-response'], pull.terminalChecksumKeysMatchActiveSet),
  rule('LR4', 'addedScopesNeedRebuild', ['pull-response'], pull.addedScopesNeedRebuild),
  rule('LR5', 'rebuildListConsistent', ['pull-response'], pull.rebuildListConsistent),
  rule('LR6', 'cursorsOnlyForHealthyScopes', ['pull-response'], pull.cursorsOnlyForHealthyScopes),
  rule('LR7', 'changesOnlyForHealthyScopes', ['pull-response'], pull.changesOnlyForHealthyScopes),
  rule('LR8', 'deleteRowsAreTombstones', ['pull-response'], pull.deleteRowsAreTombstones),
  rule('LR9', 'terminalCursorsForHealthyScopes', ['pull-response'], pull.terminalCursorsForHealthyScopes),
  rule('LR10', 'pullScopeSetVersionTransition', ['pull-response'], pull.pullScopeSetVersionTransition),
  rule('B1', 'nullCursorOnlyFirst', ['rebuild-request'], rebuild.nullCursorOnlyFirst),
  rule('B2', 'continuationRepeatsAttempt', ['rebuild-request'], rebuild.continuationRepeatsAttempt),
  rule('BR1', 'rebuildScopeEchoed', ['rebuild-response'], rebuild.rebuildScopeEchoed),
  rule('BR2', 'intermediatePageShape', ['rebuild-response'], rebuild.intermediatePageShape),
  rule('BR3', 'finalPageShape', ['rebuild-response'], rebuild.finalPageShape),
  rule('BR5', 'replayIdentical', ['rebuild-response'], (_v: unknown, ctx) => push.replayIdentical('BR5', ctx)),
  rule('E2b', 'limitContextOrdered', ['error-response'], errors.limitContextOrdered),
  rule('E3', 'statusMatchesCode', ['error-response'], errors.statusMatchesCode),
  rule('E4', 'retryAfterPresent', ['error-response', 'ready-response'], errors.retryAfterPresent),
  rule('READY', 'readyMatchesStatus', ['ready-response'], errors.readyMatchesStatus),
  rule('SCHEMA1', 'schemaEnvelopeMatchesManifest', ['schema-response'], operator.schemaEnvelopeMatchesManifest),
  rule('TABLES1', 'tablesSortedByName', ['tables-response'], operator.tablesSortedByName),
];

/**
 * Where each numbered rule of wire-protocol.md section 6 is enforced:
 * `reader` (the codec's readJsonBody), `schema` (schemas/), `rule` (RULES above), or
 * `behaviour` (client or server conduct over time, checked by features, not by
 * looking at one message).
 */
export const RULE_COVERAGE: Readonly<Record<string, 'reader' | 'schema' | 'rule' | 'schema+rule' | 'behaviour'>> = {
  G1: 'reader', G2: 'schema', G3: 'rule', G4: 'rule', G5: 'rule',
  C1: 'schema', C2: 'rule', C3: 'rule', C4: 'schema',
  CR1: 'rule', CR2: 'schema+rule', CR3: 'schema', CR4: 'rule', CR5: 'schema+rule', CR6: 'rule', CR7: 'rule', CR8: 'rule',
  M1: 'rule', M2: 'rule', M3: 'rule', M4: 'rule', M5: 'rule', M6: 'rule', M7: 'rule', M8: 'schema+rule', M9: 'rule',
  P1: 'rule', P2: 'schema', P3: 'schema', P4: 'schema', P5: 'schema', P6: 'rule', P7: 'rule', P8: 'rule',
  PR1: 'rule', PR2: 'rule', PR3: 'schema', PR4: 'schema', PR5: 'schema', PR6: 'schema+rule', PR7: 'schema+rule', PR8: 'rule', PR9: 'rule', PR10: 'rule',
  L1: 'schema', L2: 'rule', L3: 'rule',
  LR1: 'rule', LR2: 'rule', LR3: 'rule', LR4: 'rule', LR5: 'schema+rule', LR6: 'rule', LR7: 'rule', LR8: 'schema+rule', LR9: 'rule', LR10: 'rule', LR11: 'behaviour', LR12: 'behaviour',
  B1: 'rule', B2: 'rule',
  BR1: 'rule', BR2: 'rule', BR3: 'rule', BR4: 'behaviour', BR5: 'rule',
  E1: 'schema', E2: 'schema+rule', E3: 'rule', E4: 'rule', E5: 'schema',
};

export interface CheckResult {
  ok: boolean;
  schemaErrors: SchemaError[];
  violations: Violation[];
  /** Rule ids not evaluated because their context was not supplied. */
  skipped: string[];
}

/** Validates `value` as `kind` and, when the schema passes, runs every rule of that kind. */
export function checkMessage(kind: WireKind, value: unknown, ctx: RuleContext = {}): CheckResult {
  const result = validate(kind, value);
  if (!result.ok) return { ok: false, schemaErrors: result.errors, violations: [], skipped: [] };
  const violations: Violation[] = [];
  const skipped: string[] = [];
  for (const r of RULES) {
    if (!r.kinds.includes(kind)) continue;
    const found = r.check(result.value as never, ctx, kind);
    if (found === undefined) skipped.push(r.id);
    else violations.push(...found);
  }
  return { ok: violations.length === 0, schemaErrors: [], violations, skipped };
}

/** Reads message bytes (duplicate names, UTF-8, one JSON value) and then checks the value. */
export function checkBytes(kind: WireKind, bytes: Uint8Array, ctx: RuleContext = {}): CheckResult {
  const read = readJsonBody(bytes);
  if (!read.ok) {
    const id = read.code === 'json_duplicate_member' ? 'G1' : 'JSON';
    return { ok: false, schemaErrors: [], violations: [{ rule: id, pointer: read.pointer, message: `${read.message} at octet ${read.offset}` }], skipped: [] };
  }
  return checkMessage(kind, read.value, { ...ctx, read, bytes });
}
