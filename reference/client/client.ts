/**
 * The reference client façade. Applications read and write plain SQLite
 * tables through `query`/`execute`/`transaction`/`atomicWrite`; the client
 * owns capture, queueing, scheduling, verification and safe apply.
 */
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import Database from 'better-sqlite3';
import { type ClientConfig, type Clock, type Ctx, systemClock } from './context.ts';
import { ClientError, SqlRefused } from './errors.ts';
import { type ClientEvent, ClientEvents, type EventListener } from './events.ts';
import { fault } from './faults.ts';
import * as inspect from './inspect.ts';
import { loadInstalledSchema, migrate, resumeMigration } from './journal/migration.ts';
import { Lifecycle } from './lifecycle.ts';
import { guardStatement } from './local/app-sql.ts';
import { verifyManifest } from './local/manifest.ts';
import { getMeta, installMetadata, setMeta } from './local/metadata.ts';
import { installSeedCopy, readSeedReceipts } from './local/seed.ts';
import { stampStatusTransactions } from './local/status-transactions.ts';
import { validateGroup } from './queue/atomic.ts';
import { finishRebuild } from './rebuild/rebuild.ts';
import { type ClientState, isLegalTransition, isLegalTransitionFrom } from './state.ts';
import { readBackoff } from './sync/backoff.ts';
import { type Completion, runCycle } from './sync/cycle.ts';
import type { Transport } from './sync/transport.ts';

export interface OpenOptions {
  /** SQLite file path, or ':memory:'. */
  path: string;
  transport: Transport;
  clientId: string;
  appVersion?: string;
  platform?: string;
  pullLimit?: number;
  rebuildLimit?: number;
  pushBatchSize?: number;
  /** A manifest shipped with the application: allows offline writes before the first connect. */
  bundledManifest?: unknown;
  /**
   * A verified portable seed file: when `path` does not exist yet it becomes a
   * checked copy of this file, a seeded client that has never connected.
   */
  seedArtifact?: string;
  clock?: Clock;
  random?: () => number;
  crash?: (point: string) => void;
  /** Subscribed before opening recovers, so events raised while opening (a resumed migration, finished rebuild finality) reach it too. */
  onEvent?: EventListener;
  /**
   * Test control: open the database but leave recovery (an interrupted
   * migration, rebuild finality) to an explicit `recover()`, so a harness can
   * read the durable state a crash left before anything acts on it.
   */
  deferRecovery?: boolean;
}

export interface Status {
  state: ClientState;
  retryAt?: number;
  operation?: string;
  failure?: unknown;
}

export type Params = unknown[] | Record<string, unknown>;

export interface AppTransaction {
  execute(sql: string, params?: Params): { changes: number };
  query(sql: string, params?: Params): unknown[];
}

function installedSchemaOrNothing(ctx: Ctx) {
  try {
    return loadInstalledSchema(ctx);
  } catch {
    return undefined;
  }
}

/**
 * Bookkeeping runs the same few statements for every row it applies;
 * preparing each once keeps a large rebuild close to plain insert speed.
 */
function cacheStatements(db: Database.Database, limit = 512): void {
  const prepare = db.prepare.bind(db);
  const cache = new Map<string, Database.Statement>();
  db.prepare = ((source: string) => {
    let statement = cache.get(source);
    if (statement === undefined) {
      statement = prepare(source);
      if (cache.size >= limit) cache.delete(cache.keys().next().value as string);
      cache.set(source, statement);
    }
    return statement;
  }) as typeof db.prepare;
}

export class SynchroClient {
  readonly ctx: Ctx;
  readonly life: Lifecycle;
  #depth = 0;
  #running: Promise<{ completion: Completion; status: Status }> | undefined;
  /** Set while the client drives its own sync runs after `start` (see #driveUntilSettled). */
  #driving = false;

  private constructor(ctx: Ctx, life: Lifecycle) {
    this.ctx = ctx;
    this.life = life;
  }

  static open(options: OpenOptions): SynchroClient {
    if (options.seedArtifact !== undefined && options.path !== ':memory:' && !existsSync(options.path)) installSeedCopy(options.seedArtifact, options.path);
    const db = new Database(options.path);
    cacheStatements(db);
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = FULL');
    installMetadata(db);
    if (fault('seed007-seed-versions-not-installed') && options.seedArtifact !== undefined) db.exec('DELETE FROM _synchro_row_versions'); // fault: client:seed007-seed-versions-not-installed
    stampStatusTransactions(db);
    const config: ClientConfig = {
      clientId: options.clientId,
      appVersion: options.appVersion ?? '1.0.0',
      platform: options.platform ?? 'node-sqlite',
      pullLimit: options.pullLimit ?? 100,
      rebuildLimit: options.rebuildLimit ?? 100,
      pushBatchSize: options.pushBatchSize ?? 100,
    };
    for (const [name, v] of [['pullLimit', config.pullLimit], ['rebuildLimit', config.rebuildLimit], ['pushBatchSize', config.pushBatchSize]] as const) {
      if (!Number.isInteger(v) || v < 1 || v > 1000) throw new ClientError('opening', 'invalid_limit', `${name} must be an integer from 1 to 1000, got ${v}`, false, 'none');
    }
    const clock = options.clock ?? systemClock;
    const events = new ClientEvents(() => clock.now());
    if (options.onEvent !== undefined) events.on(options.onEvent);
    const ctx: Ctx = { db, schema: undefined, config, clock, transport: options.transport, crash: options.crash ?? (() => {}), random: options.random ?? Math.random, events };
    const stored = getMeta(db, 'client_id');
    if (stored !== undefined && stored !== config.clientId) throw new ClientError('opening', 'client_id_mismatch', `database belongs to client ${stored}`, false, 'none');
    setMeta(db, 'client_id', config.clientId);
    const life = new Lifecycle(ctx);
    const client = new SynchroClient(ctx, life);
    client.#bundled = options.bundledManifest;
    if (options.deferRecovery !== true) client.recover();
    return client;
  }

  #bundled: unknown;

  /** Runs opening's recovery once; `open` calls it unless recovery was deferred. */
  recover(): Status {
    if (this.life.state === 'uninitialized') this.#recover(this.#bundled);
    return this.status();
  }

  /** Opening validates metadata and finishes any interrupted migration or rebuild finality from durable records alone. */
  #recover(bundled: unknown): void {
    const { ctx, life } = this;
    try {
      if (!resumeMigration(ctx)) ctx.schema = loadInstalledSchema(ctx);
      if (ctx.schema === undefined && bundled !== undefined) migrate(ctx, verifyManifest(bundled));
      if (fault('lose-rejected-on-restart')) ctx.db.prepare(`DELETE FROM _synchro_pending_changes WHERE lifecycle_state = 'server_rejected'`).run(); // fault: client:lose-rejected-on-restart
      if (fault('requeue-rejected-on-restart')) ctx.db.prepare(`UPDATE _synchro_pending_changes SET lifecycle_state = 'pending' WHERE lifecycle_state = 'server_rejected'`).run(); // fault: client:requeue-rejected-on-restart
      if (fault('lose-pending-on-restart')) ctx.db.prepare(`DELETE FROM _synchro_pending_changes WHERE lifecycle_state = 'pending'`).run(); // fault: client:lose-pending-on-restart
      if (fault('local001-sealed-batch-in-memory')) ctx.db.exec(`UPDATE _synchro_pending_changes SET lifecycle_state = 'pending', sealed_batch_id = NULL, sealed_ordinal = NULL WHERE lifecycle_state = 'sealed'; DELETE FROM _synchro_push_batches WHERE state = 'sealed'`); // fault: client:local001-sealed-batch-in-memory
      if (fault('local001-regenerate-unsent-ids')) for (const t of ['_synchro_mutation_values', '_synchro_pending_changes']) ctx.db.prepare(`UPDATE ${t} SET mutation_id = substr(mutation_id, 29, 8) || substr(mutation_id, 9, 20) || substr(mutation_id, 1, 8) WHERE mutation_id IN (SELECT mutation_id FROM _synchro_pending_changes WHERE lifecycle_state = 'pending')`).run(); // fault: client:local001-regenerate-unsent-ids
      if (fault('local002-rebuild-session-in-memory')) ctx.db.exec('DELETE FROM _synchro_rebuild_page_receipts; DELETE FROM _synchro_rebuild_attempts'); // fault: client:local002-rebuild-session-in-memory
      const finals = ctx.db.prepare('SELECT scope_id FROM _synchro_rebuild_attempts WHERE final_checksum IS NOT NULL').all() as { scope_id: string }[];
      for (const f of finals) finishRebuild(ctx, f.scope_id);
    } catch (e) {
      const error = e instanceof ClientError ? e : new ClientError('opening', 'open_failed', (e as Error).message, false, 'none');
      // A refused migration journal leaves the source schema in force: its tables, queue and local data stay readable.
      if (ctx.schema === undefined && error.operation === 'schema') ctx.schema = installedSchemaOrNothing(ctx);
      life.go('error', error);
      return;
    }
    const previous = life.failure();
    if (previous !== undefined) {
      // A durable error survives restart; only retryAfterError leaves it.
      life.go('error');
      return;
    }
    life.go('local_ready');
  }

  // --- application SQL -----------------------------------------------------

  execute(sql: string, params: Params = []): { changes: number } {
    const kind = guardStatement(this.ctx, sql);
    if (kind === 'read') throw new SqlRefused('not_a_write', 'use query() for reads');
    const info = this.ctx.db.prepare(sql).run(params as never);
    return { changes: info.changes };
  }

  query(sql: string, params: Params = []): unknown[] {
    const kind = guardStatement(this.ctx, sql);
    if (kind !== 'read') throw new SqlRefused('not_a_read', 'use execute() for writes');
    return this.ctx.db.prepare(sql).all(params as never);
  }

  transaction<T>(fn: (tx: AppTransaction) => T): T {
    this.#depth++;
    try {
      return this.ctx.db.transaction(() => fn(this))();
    } finally {
      this.#depth--;
    }
  }

  /** Runs `fn` as one atomic write group; commit-time rules throw AtomicGroupInvalid and roll everything back. */
  atomicWrite<T>(fn: (tx: AppTransaction) => T): T {
    const outer = getMeta(this.ctx.db, 'atomic_group_id');
    if (outer !== undefined) return fn(this); // a nested group joins the outer one
    this.#depth++;
    try {
      return this.ctx.db.transaction(() => {
        const groupId = randomUUID();
        setMeta(this.ctx.db, 'atomic_group_id', groupId);
        const result = fn(this);
        if (!fault('atomic-group-rules-unchecked')) validateGroup(this.ctx, groupId); // fault: client:atomic-group-rules-unchecked
        setMeta(this.ctx.db, 'atomic_group_id', fault('atomic-group-left-open') ? groupId : null); // fault: client:atomic-group-left-open
        return result;
      })();
    } finally {
      this.#depth--;
    }
  }

  // --- lifecycle -------------------------------------------------------------

  #lifecycleCall(name: string): void {
    if (this.#depth > 0) throw new ClientError('lifecycle', 'lifecycle_call_in_transaction', `${name} cannot be called inside an application transaction`, false, 'none');
  }

  async syncNow(): Promise<{ completion: Completion; status: Status }> {
    this.#lifecycleCall('syncNow');
    if (this.#running !== undefined) return this.#running;
    const state = fault('sync-restarts-stopped') && this.life.state === 'stopped' ? this.start().state : this.life.state; // fault: client:sync-restarts-stopped
    if (state === 'stopped') return { completion: 'idle', status: this.status() };
    if (state === 'error') return fault('sync-clears-error') ? this.retryAfterError() : { completion: 'error', status: this.status() }; // fault: client:sync-clears-error
    this.#running = runCycle(this.ctx, this.life).then((completion) => ({ completion, status: this.status() }));
    try {
      return await this.#running;
    } finally {
      this.#running = undefined;
    }
  }

  /** An explicit new start after stop: reopen, validate and recover, then wait for syncNow. */
  start(): Status {
    this.#lifecycleCall('start');
    if (fault('local004-start-clears-rejections')) this.clearRejections(); // fault: client:local004-start-clears-rejections
    if (this.life.state === 'stopped') this.life.go('local_ready');
    else this.#driveUntilSettled();
    return this.status();
  }

  /**
   * `start` on a client that is not stopped hands scheduling to the client:
   * it runs sync cycles on its own, and after a retryable failure waits for
   * the stored backoff deadline and retries the same work, until a run ends
   * idle or in error, or the application stops it. The host supplies no
   * retry timer.
   */
  #driveUntilSettled(): void {
    if (this.#driving) return;
    this.#driving = true;
    void (async () => {
      try {
        for (;;) {
          const { completion } = await this.syncNow();
          if (completion !== 'blocked' || this.life.stopRequested || this.life.state === 'stopped') return;
        }
      } catch {
        // A failed run is already stored as the client's error state; nothing more to report here.
      } finally {
        this.#driving = false;
      }
    })();
  }

  /**
   * Blocks new scheduling, lets the step in flight finish (its results are
   * durable either way), then enters stopped. Nothing durable is deleted.
   */
  stop(): Promise<Status> {
    this.#lifecycleCall('stop');
    this.life.stopRequested = true;
    const running = this.#running ?? Promise.resolve();
    return running.then(
      () => this.#enterStopped(),
      () => this.#enterStopped(),
    );
  }

  #enterStopped(): Status {
    this.life.stopRequested = false;
    if (this.life.state !== 'stopped' && isLegalTransition(this.life.state, 'stopped')) this.life.go('stopped');
    return this.status();
  }

  /** The acknowledgement that leaves error; all queue, cursor and rebuild records are kept. */
  async retryAfterError(): Promise<{ completion: Completion; status: Status }> {
    this.#lifecycleCall('retryAfterError');
    if (this.life.state !== 'error') return { completion: 'idle', status: this.status() };
    this.life.go('local_ready');
    return this.syncNow();
  }

  /**
   * Explicit schema recovery: the next connect carries `schema_reset: true`;
   * queue, rejections and sealed batches are kept, affected scopes rebuilt.
   */
  async resetSchemaAndStart(): Promise<{ completion: Completion; status: Status }> {
    this.#lifecycleCall('resetSchemaAndStart');
    setMeta(this.ctx.db, 'schema_reset', '1');
    setMeta(this.ctx.db, 'needs_connect', '1');
    if (fault('schema-reset-unseals-batches')) this.ctx.db.exec(`UPDATE _synchro_pending_changes SET lifecycle_state = 'pending', sealed_batch_id = NULL, sealed_ordinal = NULL WHERE lifecycle_state = 'sealed'; DELETE FROM _synchro_push_batches WHERE state = 'sealed'`); // fault: client:schema-reset-unseals-batches
    if (this.life.state === 'error' || this.life.state === 'stopped') this.life.go('local_ready');
    return this.syncNow();
  }

  status(): Status {
    const state = this.life.state;
    const out: Status = { state };
    if (state === 'backoff') {
      const b = readBackoff(this.ctx);
      if (b !== undefined) {
        out.retryAt = b.next_retry_at_ms;
        out.operation = b.resume_state;
      }
    }
    if (state === 'error') out.failure = this.life.failure();
    return out;
  }

  // --- events ----------------------------------------------------------------

  /** Subscribes to committed-change events; returns the unsubscribe function. A throwing listener is ignored. */
  on(listener: EventListener): () => void {
    return (this.ctx.events as ClientEvents).on(listener);
  }

  /** Every event published since this process opened the client, with its sequence number. */
  eventLog(): ClientEvent[] {
    return (this.ctx.events as ClientEvents).log();
  }

  // --- inspection and policy -------------------------------------------------

  inspectMutations() {
    return inspect.inspectMutations(this.ctx);
  }
  inspectRejections() {
    return inspect.inspectRejections(this.ctx);
  }
  inspectBatches() {
    return inspect.inspectBatches(this.ctx);
  }
  inspectScopes() {
    return inspect.inspectScopes(this.ctx);
  }
  inspectProvenance() {
    return inspect.inspectProvenance(this.ctx);
  }
  inspectRowVersions() {
    return inspect.inspectRowVersions(this.ctx);
  }
  inspectRebuilds() {
    return inspect.inspectRebuilds(this.ctx);
  }
  /** Continuation receipts of an installed seed not yet presented to a connect. */
  inspectSeedReceipts() {
    return readSeedReceipts(this.ctx.db);
  }
  inspectBackoff() {
    return readBackoff(this.ctx) ?? null;
  }
  snapshotDigest(excludeBackoff: boolean) {
    return inspect.snapshotDigest(this.ctx, excludeBackoff);
  }

  /**
   * Checks a transition without making it: the same rule `go` and the sync
   * cycle follow. Leaving backoff is judged against `interrupted`, or against
   * the persisted backoff record when none is given. Nothing is written.
   */
  validateTransition(from: unknown, to: unknown, interrupted?: string): void {
    const resume = interrupted ?? readBackoff(this.ctx)?.resume_state;
    if (!isLegalTransitionFrom(from, to, resume)) {
      throw new ClientError('lifecycle', 'invalid_state_transition', `transition ${String(from)} -> ${String(to)} is not allowed`, false, 'none');
    }
  }

  /**
   * The one explicit policy that deletes retained rejections: the rejection
   * records and the queue records of the rejected mutations with their
   * authored values, in one transaction. Nothing else ever removes intent.
   */
  clearRejections(): number {
    const { db } = this.ctx;
    return db.transaction(() => {
      db.prepare(`DELETE FROM _synchro_mutation_values WHERE mutation_id IN (SELECT mutation_id FROM _synchro_pending_changes WHERE lifecycle_state = 'server_rejected')`).run();
      db.prepare(`DELETE FROM _synchro_pending_changes WHERE lifecycle_state = 'server_rejected'`).run();
      return db.prepare('DELETE FROM _synchro_rejected_mutations').run().changes;
    })();
  }

  close(): void {
    this.ctx.db.close();
  }
}
