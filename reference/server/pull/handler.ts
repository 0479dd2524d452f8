/**
 * POST /sync/pull. One repeatable-read transaction whose first read is the
 * materialization progress row (boundary B); everything after reads only
 * the captured state through B. Order: gates, scope checks, cursor
 * verification (forged → 400, stale → rebuild), capture gate, assignment
 * reconciliation, per-scope streams, merge under the global limit, cursors,
 * terminal checksums, acknowledgement of presented cursors.
 */
import type { Pool, PoolClient } from 'pg';
import { canonicalJson, utf8Order } from '../../../harness/codec/index.ts';
import type { PullRequest } from '../../../harness/wire/index.ts';
import { validate } from '../../../harness/wire/index.ts';
import { acknowledgeAhead } from '../core/acknowledgement-faults.ts';
import type { Admit } from '../core/admission.ts';
import { type Reconciled, reconcile, storedAssignment } from '../core/assignment.ts';
import { acknowledge } from '../core/checkpoints.ts';
import { scopeChecksums } from '../core/checksums.ts';
import { serverClock } from '../core/clock.ts';
import { type Bindings, checkCursor, issueCursor, readLineage } from '../core/cursor.ts';
import { type CanonicalResult, commitThroughEntryPoint } from '../core/entry-points.ts';
import { invalidRequest } from '../core/errors.ts';
import { reconcileAhead, withLiveSourceRows } from '../core/fault-behaviour.ts';
import { fault } from '../core/faults.ts';
import { gateCapture, gateClient } from '../core/gates.ts';
import { checkPullText } from '../core/input-limits.ts';
import type { Catalog, ManifestStore } from '../core/manifests.ts';
import { named } from '../core/named-statements.ts';
import type { Position } from '../core/position.ts';
import { deltaForPresented, pruneScopeSets, type ScopeDelta } from '../core/scope-history.ts';
import { readBoundary, withClientSnapshot } from '../core/snapshot.ts';
import { wireChange } from '../core/wire-change.ts';
import { type Candidate, mergeStreams, positionOf } from './changes.ts';
import { dropSentBefore, sourceHead } from './eligibility-faults.ts';
import { CandidateIntegrityFailure, firstBrokenCandidate, recordBrokenCandidate } from './verified-outcomes.ts';

/** scope_updates of a pull, then the history the client will never ask from again is dropped. */
async function updatesFor(db: PoolClient, userId: string, request: PullRequest, storedVersion: number, assignment: Reconciled): Promise<ScopeDelta> {
  const ids = { userId, clientId: request.client_id };
  const delta = await deltaForPresented(db, ids, { presented: request.scope_set_version, stored: storedVersion }, assignment, Object.keys(request.scopes));
  await pruneScopeSets(db, userId, request.client_id, request.scope_set_version);
  return delta;
}

export async function handlePull(pool: Pool, manifests: ManifestStore, userId: string, value: unknown, admit: Admit = () => {}): Promise<CanonicalResult> {
  if (fault('reconcile-before-request-checks')) await reconcileAhead(pool, userId, value); // fault: server:reconcile-before-request-checks
  if (fault('acknowledge-before-request-checks')) await acknowledgeAhead(pool, userId, value); // fault: server:acknowledge-before-request-checks
  if (fault('zero-generation-as-first') && (value as { client_generation?: unknown }).client_generation === 0) (value as { client_generation: number }).client_generation = 1; // fault: server:zero-generation-as-first
  if (fault('bound005-pull-drops-unknown-members')) value = Object.fromEntries(Object.entries(value as Record<string, unknown>).filter(([member]) => ['client_id', 'client_generation', 'schema', 'scope_set_version', 'scopes', 'limit'].includes(member))); // fault: server:bound005-pull-drops-unknown-members
  if (fault('schema007-pull-limit-clamped')) (value as { limit?: unknown }).limit = Math.min(1000, Math.max(1, Math.trunc(Number((value as { limit?: unknown }).limit ?? 1000)) || 1000)); // fault: server:schema007-pull-limit-clamped
  const parsed = validate('pull-request', value);
  if (!parsed.ok) throw invalidRequest();
  const request: PullRequest = parsed.value;
  checkPullText(request);
  const catalog = await manifests.catalog();
  try {
    return await servePull(pool, catalog, userId, request, admit);
  } catch (e) {
    // The page's transaction rolled back; the broken effect is recorded on its own, which makes readiness unready.
    if (e instanceof CandidateIntegrityFailure && !fault('pull004-failure-not-recorded')) await recordBrokenCandidate(pool, e); // fault: server:pull004-failure-not-recorded
    throw e;
  }
}

async function servePull(pool: Pool, catalog: Catalog, userId: string, request: PullRequest, admit: Admit): Promise<CanonicalResult> {
  return await withClientSnapshot(pool, JSON.stringify(['pull', userId, request.client_id]), async (db) => {
    const { boundary, streamGeneration } = await readBoundary(db);
    const client = await gateClient(db, userId, request, catalog);
    if (request.scope_set_version > client.scopeSetVersion) throw invalidRequest('scope_set_version is ahead of the server');
    const ever = await db.query<{ scope_id: string; assigned: boolean }>(named('SELECT scope_id, assigned FROM synchro.client_scopes WHERE user_id = $1 AND client_id = $2', [userId, request.client_id]));
    const everAssigned = new Map(ever.rows.map((r) => [r.scope_id, r.assigned]));
    const presented = Object.keys(request.scopes);
    if (presented.some((s) => !everAssigned.has(s)) && !fault('accept-unassigned-scopes')) throw invalidRequest('a scope was never assigned to this client'); // fault: server:accept-unassigned-scopes

    const bindings: Bindings = { userId, clientId: request.client_id, clientGeneration: client.clientGeneration, schemaHash: catalog.current.hash, streamGeneration };
    const lineage = await readLineage(db, [...everAssigned.keys()]);
    const valid = new Map<string, Position>();
    const stale = new Set<string>();
    for (const scope of presented) {
      const cursor = request.scopes[scope]?.cursor ?? null;
      if (cursor === null && fault('pull021-null-cursor-from-history')) { valid.set(scope, { kind: 'generation_start' }); continue; } // fault: server:pull021-null-cursor-from-history
      if (cursor === null) continue;
      const check = await checkCursor(db, bindings, scope, cursor, lineage.get(scope) as NonNullable<ReturnType<typeof lineage.get>>, boundary);
      if (check.status === 'forged' && fault('accept-forged-cursor')) { stale.add(scope); continue; } // fault: server:accept-forged-cursor
      if (check.status === 'forged' && fault('pull008-forged-scope-isolated') && presented.length > 1) { stale.add(scope); continue; } // fault: server:pull008-forged-scope-isolated
      if (check.status === 'stale' && fault('pull008-stale-cursor-refused')) throw invalidRequest(); // fault: server:pull008-stale-cursor-refused
      if (check.status === 'forged') throw invalidRequest();
      if (check.status === 'stale') stale.add(scope);
      else valid.set(scope, check.position);
    }
    if (fault('stale-cursor-stales-all') && stale.size > 0) for (const scope of [...valid.keys()]) { stale.add(scope); valid.delete(scope); } // fault: server:stale-cursor-stales-all
    admit();
    await gateCapture(db, userId, request.client_id);

    // Pull-time reconciliation: the same rule as connect, one version step on change.
    const assignment = fault('skip-pull-reconciliation') ? await storedAssignment(db, userId, request.client_id, client.scopeSetVersion) : await reconcile(db, userId, request.client_id, client.scopeSetVersion); // fault: server:skip-pull-reconciliation
    const active = new Set(assignment.assigned);
    for (const s of assignment.added) if (!lineage.has(s)) lineage.set(s, { membershipGeneration: 1, retentionGeneration: 1, floor: { kind: 'generation_start' } });
    const delta = await updatesFor(db, userId, request, client.scopeSetVersion, assignment);
    const rebuild = assignment.assigned.filter((s) => !valid.has(s) || delta.added.includes(s));
    const served = assignment.assigned.filter((s) => valid.has(s) && !delta.added.includes(s));

    // Per-scope streams merged under the global limit.
    const { selected, hasMore, exhausted: done } = await mergeStreams(db, served.map((scope) => ({ scope, after: valid.get(scope) as Position })), streamGeneration, boundary, request.limit);
    if (fault('skip-changes-sent-before')) dropSentBefore(request.client_id, selected); // fault: server:skip-changes-sent-before
    // Every selected candidate has a verified outcome, or the whole page fails.
    const broken = firstBrokenCandidate(selected, catalog.tables, catalog.current.hash);
    if (broken !== undefined && fault('pull004-broken-candidate-left-out')) selected.splice(selected.indexOf(broken.candidate), 1); // fault: server:pull004-broken-candidate-left-out
    else if (broken !== undefined) throw new CandidateIntegrityFailure(broken, streamGeneration);
    if (fault('pull004-rows-read-live')) await withLiveSourceRows(db, catalog.tables, selected); // fault: server:pull004-rows-read-live
    if (fault('cap003-changes-by-table-name')) selected.sort((a, b) => utf8Order(catalog.tables.get(a.tableId)?.name ?? '', catalog.tables.get(b.tableId)?.name ?? '')); // fault: server:cap003-changes-by-table-name
    const changes = selected.map((c) => wireChange(c, catalog.tables, catalog.current.hash));

    const scopeCursors: Record<string, string> = {};
    for (const scope of served) {
      const mine = selected.filter((c) => c.scope === scope);
      const exhausted = done.has(scope);
      let position: Position | undefined;
      if (exhausted) position = boundary;
      else if (mine.length > 0) position = positionOf(mine[mine.length - 1] as Candidate);
      if (exhausted && fault('cursor-at-source-head')) position = await sourceHead(db); // fault: server:cursor-at-source-head
      if (fault('cursor-at-event-end') && position?.kind === 'effect') position = { ...position, effect: 2147483647 }; // fault: server:cursor-at-event-end
      if (fault('cap003-page-cursor-at-transaction-end') && position?.kind === 'effect') position = { kind: 'transaction_end', lsn: position.lsn }; // fault: server:cap003-page-cursor-at-transaction-end
      if (position !== undefined) scopeCursors[scope] = await issueCursor(db, bindings, scope, lineage.get(scope) as NonNullable<ReturnType<typeof lineage.get>>, position);
      if (fault('acknowledge-issued-cursor') && position !== undefined) valid.set(scope, position); // fault: server:acknowledge-issued-cursor
    }

    const response: Record<string, unknown> = {
      changes,
      scope_set_version: assignment.scopeSetVersion,
      scope_cursors: scopeCursors,
      scope_updates: { add: delta.added.map((id) => ({ id, cursor: null })), remove: delta.removed },
      rebuild: [...new Set(rebuild)].sort(utf8Order),
      has_more: hasMore,
    };
    if (!hasMore) {
      response.checksums = await scopeChecksums(db, catalog.tables, catalog.current.hash, [...active].sort(utf8Order));
    }
    if (fault('checksums-on-every-page')) response.checksums = await scopeChecksums(db, catalog.tables, catalog.current.hash, [...active].sort(utf8Order)); // fault: server:checksums-on-every-page
    if (fault('checksum-keys-presented') && !hasMore) response.checksums = await scopeChecksums(db, catalog.tables, catalog.current.hash, Object.keys(request.scopes).sort(utf8Order)); // fault: server:checksum-keys-presented

    // Acknowledge presented valid cursors; a checkpoint never moves back.
    await acknowledge(db, { userId, clientId: request.client_id, streamGeneration, positions: valid }, !fault('checkpoint-follows-older-cursor')); // fault: server:checkpoint-follows-older-cursor
    if (valid.size > 0) await db.query(named('UPDATE synchro.clients SET last_acknowledged_at = $3 WHERE user_id = $1 AND client_id = $2', [userId, request.client_id, serverClock.now()]));
    return canonicalJson(response);
  }, (db, body) => commitThroughEntryPoint(db, 'pull', userId, body));
}

