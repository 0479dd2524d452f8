/**
 * The reference client as a client-adapter process: line-delimited JSON-RPC
 * 2.0 on stdin/stdout (docs/client-adapter-protocol.md), logs on stderr.
 * Armed crash points end the process with SIGKILL at once, with no cleanup,
 * so restarts are tested against exactly what was durable at that moment.
 *
 * SYNCHRO_CRASH_AT=<point>[,<point>] arms points before `open` runs, for
 * points reached while opening (the migration journal phases).
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { JSONRPCErrorException, JSONRPCServer } from 'json-rpc-2.0';
import { SynchroClient } from './client/client.ts';
import { AtomicGroupInvalid, ClientError, SqlRefused } from './client/errors.ts';
import { inspectMigration } from './client/journal/inspect.ts';
import { type Tamper, tamperMigration } from './client/journal/tamper.ts';
import { httpTransport } from './client/sync/transport.ts';

export const CRASH_POINTS = [
  'after_capture_commit',
  'after_seal_commit',
  'before_push_send',
  'after_push_response_received',
  'after_push_apply_commit',
  'after_pull_response_received',
  'inside_pull_apply',
  'after_pull_apply_commit',
  'after_rebuild_attempt_commit',
  'after_rebuild_page_commit',
  'before_rebuild_finality_commit',
  'after_backoff_commit',
  'migration_prepared',
  'migration_ddl_applied',
  'inside_scope_cleanup',
] as const;

const armed = new Set((process.env.SYNCHRO_CRASH_AT ?? '').split(',').filter(Boolean));
let client: SynchroClient | undefined;

function crash(point: string): void {
  if (armed.has(point)) process.kill(process.pid, 'SIGKILL');
}

function need(): SynchroClient {
  if (client === undefined) throw new JSONRPCErrorException('open has not been called', -32000, { type: 'not_open', retryable: false });
  return client;
}

/** Runs `fn`, turning client and SQL failures into the protocol's typed JSON-RPC errors. */
function guarded<T>(fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    throw toRpcError(e);
  }
}

function toRpcError(e: unknown): Error {
  if (e instanceof JSONRPCErrorException) return e;
  if (e instanceof ClientError) return new JSONRPCErrorException(e.message, -32000, { type: e.code, retryable: e.retryable, operation: e.operation });
  if (e instanceof SqlRefused) return new JSONRPCErrorException(e.message, -32001, { sqlError: e.code });
  if (e instanceof Error && (e as { code?: string }).code?.startsWith('SQLITE')) return new JSONRPCErrorException(e.message, -32001, { sqlError: e.message });
  return new JSONRPCErrorException(String((e as Error)?.message ?? e), -32603);
}

interface Statement {
  sql: string;
  params?: unknown[] | Record<string, unknown>;
}

/**
 * Authored values keyed by column name as the mutation's own authored schema
 * names them (a field the current schema no longer has keeps its name), else
 * as the current schema does.
 */
function columnsByName(c: SynchroClient, tableId: string, columns: Record<string, unknown>, authored: { version: number; hash: string }): Record<string, unknown> {
  const table = c.ctx.schema?.byId.get(tableId);
  const archived = c.ctx.db.prepare('SELECT manifest_json FROM _synchro_schema_archives WHERE schema_version = ? AND schema_hash = ?').get(authored.version, authored.hash) as { manifest_json: string } | undefined;
  const authoredFields = ((archived === undefined ? undefined : (JSON.parse(archived.manifest_json) as { tables?: { table_id: string; fields: { field_id: string; name: string }[] }[] }).tables) ?? []).find((t) => t.table_id === tableId)?.fields ?? [];
  const out: Record<string, unknown> = {};
  for (const [fieldId, value] of Object.entries(columns)) out[authoredFields.find((f) => f.field_id === fieldId)?.name ?? table?.columns.find((col) => col.fieldId === fieldId)?.name ?? fieldId] = value;
  return out;
}

const rpc = new JSONRPCServer();
const add = (name: string, fn: (params: Record<string, unknown>) => unknown) =>
  rpc.addMethod(name, async (params) => {
    try {
      return await fn((params ?? {}) as Record<string, unknown>);
    } catch (e) {
      throw toRpcError(e);
    }
  });

add('open', (p) => {
  const dataDir = String(p.dataDir);
  mkdirSync(dataDir, { recursive: true });
  const token = String(p.token);
  client = SynchroClient.open({
    path: join(dataDir, 'client.db'),
    transport: httpTransport(String(p.serverUrl), () => token),
    clientId: String(p.clientId),
    appVersion: String(p.appVersion),
    bundledManifest: p.bundledManifest,
    // A portable seed artifact to start from when the data directory holds no client database yet.
    ...(typeof p.seedPath === 'string' ? { seedArtifact: p.seedPath } : {}),
    pullLimit: p.pullLimit as number | undefined,
    rebuildLimit: p.rebuildLimit as number | undefined,
    pushBatchSize: p.pushBatchSize as number | undefined,
    deferRecovery: p.deferRecovery === true,
    crash,
  });
  return {};
});
// Opening's recovery, when `open` was asked to defer it (a test control): migration journal, rebuild finality.
add('recover', () => ({ status: need().recover().state }));
add('inspectMigration', () => inspectMigration(need().ctx.db));
// A test control for a client that is not open: the harness damages its stored migration state between two runs.
add('tamperMigration', (p) => {
  if (client !== undefined) throw new JSONRPCErrorException('tamperMigration needs a client that is not open', -32000, { type: 'client_open', retryable: false });
  const { dataDir, ...tamper } = p;
  return { changed: tamperMigration(join(String(dataDir), 'client.db'), tamper as unknown as Tamper) };
});
add('start', () => ({ status: need().start().state }));
add('stop', async () => ({ status: (await need().stop()).state }));
add('close', async () => {
  const c = need();
  const status = (await c.stop()).state;
  c.close();
  client = undefined;
  return { status };
});
/** Syncs running now: while one waits on the network, the application's own SQL is not held behind it. */
let syncsInFlight = 0;
add('syncNow', async () => {
  syncsInFlight += 1;
  try {
    const r = await need().syncNow();
    return { completion: r.completion, status: r.status.state, detail: r.status };
  } finally {
    syncsInFlight -= 1;
  }
});
add('retryAfterError', async () => ({ status: (await need().retryAfterError()).status.state }));
add('resetSchemaAndStart', async () => ({ status: (await need().resetSchemaAndStart()).status.state }));
add('getStatus', () => {
  const c = need();
  const detail = c.status();
  const failure = detail.failure as { operation: string; code: string; retryable: boolean; message: string; recoveryAction: string } | undefined;
  return {
    status: c.life.state,
    statusLog: c.life.log,
    statusTimes: c.life.logTimes,
    eventLog: c.eventLog(),
    detail,
    ...(failure === undefined ? {} : { failure: { operation: failure.operation, code: failure.code, retryable: failure.retryable, message: failure.message, recoveryAction: failure.recoveryAction } }),
  };
});
add('query', (p) => guarded(() => ({ rows: need().query(String(p.sql), (p.params as Statement['params']) ?? []) })));
add('execute', (p) =>
  guarded(() => {
    const result = need().execute(String(p.sql), (p.params as Statement['params']) ?? []);
    crash('after_capture_commit');
    return result;
  }),
);
add('transaction', (p) =>
  guarded(() => {
    const c = need();
    c.transaction((tx) => {
      for (const s of p.statements as Statement[]) tx.execute(s.sql, s.params ?? []);
    });
    crash('after_capture_commit');
    return {};
  }),
);
add('atomicWrite', (p) => {
  const c = need();
  try {
    c.atomicWrite((tx) => {
      for (const s of p.statements as Statement[]) tx.execute(s.sql, s.params ?? []);
    });
  } catch (e) {
    if (e instanceof AtomicGroupInvalid) return { ok: false, errorCode: 'atomic_group_invalid', reason: e.reason };
    throw toRpcError(e);
  }
  crash('after_capture_commit');
  return { ok: true };
});
add('armCrash', (p) => {
  const point = String(p.point);
  if (!(CRASH_POINTS as readonly string[]).includes(point)) throw new JSONRPCErrorException(`unknown crash point ${point}`, -32602);
  armed.add(point);
  return {};
});
add('crashPoints', () => ({ points: [...CRASH_POINTS] }));
add('inspectMutations', () => {
  const c = need();
  return {
    mutations: c.inspectMutations().map((m) => ({
      id: m.mutationId,
      table: m.tableName,
      tableId: m.tableId,
      recordId: m.recordId,
      op: m.operation,
      status: m.status,
      sourceKind: m.sourceKind,
      localOrder: m.localOrder,
      authoredSchema: m.authoredSchema,
      links: { dependsOnMutationId: m.dependsOnMutationId, normalizedMutationId: m.normalizedMutationId },
      batchId: m.sealedBatchId,
      ordinal: m.sealedOrdinal,
      columns: columnsByName(c, m.tableId, m.columns, m.authoredSchema),
      baseVersion: m.baseVersion,
      clientVersion: m.clientVersion,
      groupId: m.atomicGroupId,
      statusTransaction: m.statusTransaction,
    })),
  };
});
add('inspectRejections', () => ({ rejections: need().inspectRejections() }));
add('clearRejections', () => ({ cleared: need().clearRejections() }));
add('inspectBatches', () => ({ batches: need().inspectBatches() }));
add('inspectScopes', () => need().inspectScopes());
add('inspectProvenance', () => ({ provenance: need().inspectProvenance() }));
add('inspectRebuilds', () => ({ rebuilds: need().inspectRebuilds() }));
add('inspectRowVersions', () => ({ versions: need().inspectRowVersions() }));
// Continuation receipts of an installed seed that no connect has presented yet (emptied by the first connect's answer).
add('inspectSeedReceipts', () => ({ receipts: need().inspectSeedReceipts().map((r) => ({ scopeId: r.scopeId, receipt: r.receipt })) }));
add('inspectBackoff', () => {
  const b = need().inspectBackoff();
  return {
    backoff:
      b === null ? null : { operation: b.resume_state, workIdentity: b.work_identity, classification: b.retry_classification, attempt: b.attempt_count, nextRetryAt: b.next_retry_at_ms },
  };
});
add('snapshotDigest', (p) => need().snapshotDigest(p.excludeBackoff === true));
add('validateTransition', (p) => {
  try {
    need().validateTransition(p.from, p.to, typeof p.interrupted === 'string' ? p.interrupted : undefined);
    return { legal: true };
  } catch (e) {
    if (e instanceof ClientError) return { legal: false, error: { type: e.code, retryable: e.retryable } };
    throw e;
  }
});

/**
 * Read-only calls that reach no crash point; they are answered at once, even
 * while a sync is waiting on the network, so the harness can observe the
 * client in the middle of a request. Each reads in one SQLite transaction.
 */
const READ_ONLY = new Set(['getStatus', 'snapshotDigest', 'inspectMutations', 'inspectRejections', 'inspectBatches', 'inspectScopes', 'inspectProvenance', 'inspectRebuilds', 'inspectRowVersions', 'inspectBackoff', 'inspectSeedReceipts', 'inspectMigration', 'validateTransition', 'crashPoints']);

function methodOf(line: string): unknown {
  try {
    return (JSON.parse(line) as { method?: unknown }).method;
  } catch {
    return undefined;
  }
}

async function answer(line: string): Promise<void> {
  const response = await rpc.receiveJSON(line);
  if (response !== null) process.stdout.write(`${JSON.stringify(response)}\n`);
}

/**
 * The application's local SQL. An application keeps reading and writing its
 * tables while a sync runs in the background, so while a sync waits on the
 * network these are answered at once too; each is one synchronous SQLite
 * transaction and reaches its crash point inside the call.
 */
const APP_SQL = new Set(['query', 'execute', 'transaction', 'atomicWrite']);

// Other requests are handled one at a time, in arrival order, so a crash point is reached deterministically.
let chain: Promise<void> = Promise.resolve();
const lines = createInterface({ input: process.stdin });
lines.on('line', (line) => {
  if (line.trim() === '') return;
  const method = String(methodOf(line));
  if (READ_ONLY.has(method) || (syncsInFlight > 0 && APP_SQL.has(method))) void answer(line);
  else chain = chain.then(() => answer(line));
});
lines.on('close', () => {
  void chain.then(() => {
    client?.close();
    process.exit(0);
  });
});
