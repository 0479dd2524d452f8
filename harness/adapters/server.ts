/**
 * The server adapter contract: everything the harness may ask of a server
 * implementation. The wire (`baseUrl` plus a bearer token per user) is
 * mandatory; every other group is optional and declared as a capability, so a
 * scenario needing a group the adapter lacks is reported not-applicable
 * instead of being run against a stand-in.
 */
import type { ServerCapability } from './capabilities.ts';

export type Row = Record<string, unknown>;

/** What the server's push entry point did when called inside a caller's SQL transaction. */
export type PushEntryResult =
  | { ok: true; body: string }
  | { ok: false; sqlstate: string; message: string }
  | { ok: false; error: Record<string, unknown> };

/** Direct SQL against the server's database, as its owner. */
export interface SourceSqlControl {
  query<R extends Row = Row>(sql: string, params?: readonly unknown[]): Promise<R[]>;
  /**
   * Optional: opens one transaction on the server's database, runs
   * `statements` in it, then calls the server's push entry point (the SQL-level
   * push an application may call inside its own transaction) for `userId`
   * with `request`; commits when the call returns and rolls back when
   * anything fails. A SQL failure is answered with its SQLSTATE, a protocol
   * refusal with its error body.
   */
  pushInTransaction?(statements: string, userId: string, request: unknown): Promise<PushEntryResult>;
  /**
   * Optional: a further connection to the source database of its own, for a
   * scenario that holds a transaction open while the server works, or probes
   * locks from another session. Closed by `close` of the session, and by the
   * adapter when the scenario's server closes.
   */
  session?(): Promise<SourceSqlSession>;
  /**
   * Optional: runs `sql` (one or more statements) in a session of its own,
   * connected as a login of `role` and of nothing else: a member of exactly
   * that Synchro group, or, for `public`, a login in no Synchro group. The
   * harness tries forbidden actions this way (SYNC-OPS-001/002), so a
   * privilege is proven by its refusal, not only read from the catalog. Only
   * the roles the adapter has a login for are offered (`roles`).
   */
  asRole?(role: DatabaseRole, sql: string): Promise<RoleStatementOutcome>;
  /** The roles `asRole` can act as. */
  readonly roles?: readonly DatabaseRole[];
}

/** The Synchro group roles a login can belong to, and `public` (a login in none of them). */
export const DATABASE_ROLES = ['synchro_adapter', 'synchro_seed', 'synchro_monitor', 'synchro_operator', 'synchro_worker', 'public'] as const;
export type DatabaseRole = (typeof DATABASE_ROLES)[number];

/** What a statement run as a role did: the rows of its last statement, or the SQLSTATE it failed with. */
export type RoleStatementOutcome = { ok: true; login: string; rows: Row[] } | { ok: false; login: string; sqlstate: string; message: string };

/** A source database connection of its own: its statements run in order, one transaction at a time. */
export interface SourceSqlSession {
  query<R extends Row = Row>(sql: string, params?: readonly unknown[]): Promise<R[]>;
  close(): Promise<void>;
}

/** Options of `synchro.synchro_register_table`; absent members keep the server's defaults. */
export interface TableRegistration {
  relation: string;
  membershipFunction?: string | null;
  composition?: string | null;
  pkColumn?: string | null;
  updatedAtColumn?: string | null;
  deletedAtColumn?: string | null;
  pushPolicy?: string | null;
  excludeColumns?: string[] | null;
  syncColumns?: string[] | null;
  maxScopeFanout?: number | null;
}

/** Installs what a scenario needs: source tables, registrations. */
export interface ProvisionControl {
  /** Runs DDL or DML (several statements allowed) as the database owner. */
  exec(sql: string): Promise<void>;
  registerTable(registration: TableRegistration): Promise<void>;
  /**
   * Changes the membership function of a registered relation the controlled
   * way: the server re-places the rows it already captured and moves only
   * the scopes whose contents change to a new membership generation.
   */
  reconfigureMembership(relation: string, membershipFunction: string): Promise<void>;
  /**
   * Optional: the same change run as a staged backfill the operator drives.
   * `begin` validates and records it and changes nothing live; each
   * `runBatch` stages the next `batchSize` rows beside the live edges (0 once
   * every row has been staged); `activate` catches up every write since and
   * activates the whole staged set in one transaction. Between calls the
   * backfill is held: the prior generation is all clients see.
   */
  membershipBackfill?(relation: string, membershipFunction: string, batchSize: number): Promise<MembershipBackfill>;
  /**
   * Optional: moves a registered relation to another composition
   * (`single_scope`, `multi_scope`) the controlled way: a new registry
   * generation, and a new membership generation for every scope holding
   * rows of the relation.
   */
  reconfigureComposition?(relation: string, composition: string): Promise<void>;
  /**
   * Optional: renames the registered `relation` (schema-qualified) to
   * `renamed` (same schema) and binds its registration to the new name in
   * the same transaction, the controlled way: a new registry generation, and
   * a new membership generation for every scope holding its rows. A rename
   * alone would leave the registration naming a missing relation (drift).
   */
  rebindRelation?(relation: string, renamed: string): Promise<void>;
  /**
   * Optional: binds the registration made under `registered` (schema-qualified)
   * to `relation`, the registered object as it stands after an operator
   * renamed it or moved it to another schema (capture sees drift meanwhile),
   * the controlled way: a new registry generation, a re-baseline of the table
   * and a rebuild of every scope whose contents that changes. Refused for any
   * other relation.
   */
  bindRelation?(registered: string, relation: string): Promise<void>;
}

/** One staged membership backfill, held between calls. */
export interface MembershipBackfill {
  runBatch(): Promise<number>;
  activate(): Promise<void>;
}

/** Scope assignment: the four sources of the assigned set. */
export interface ScopesControl {
  grantUserScope(userId: string, scopeId: string): Promise<void>;
  revokeUserScope(userId: string, scopeId: string): Promise<void>;
  /** `portable` true declares the shared scope exportable as a portable seed; absent keeps the server's default (not portable). */
  registerSharedScope(scopeId: string, portable?: boolean): Promise<void>;
  unregisterSharedScope(scopeId: string): Promise<void>;
  /** `maxScopes` undefined uses the SQL default; null means unbounded. */
  registerAssignmentFunction(name: string | null, maxScopes?: number | null): Promise<unknown>;
  unregisterAssignmentFunction(): Promise<void>;
  /** Optional: a controlled retention lineage reset of one scope (its next retention generation); every cursor, rebuild and receipt of the scope goes stale. */
  resetRetentionLineage?(scopeId: string): Promise<void>;
}

/** The published schema as the server's SQL API reports it. */
export interface SchemaControl {
  manifest(): Promise<unknown>;
  tables(): Promise<unknown>;
}

/** The points inside one transaction's boundary, slot and acknowledgement steps where a crash can be arranged. */
export type CaptureCrashPoint = 'after-materialization-commit' | 'after-slot-advance' | 'after-acknowledgement';

/** Change capture control (the WAL worker of the reference). */
export interface CaptureControl {
  /**
   * Resolves once every source transaction committed before the call is
   * visible to pull and rebuild. Offered on its own by servers that capture
   * asynchronously, since any scenario writing source rows has to wait for it.
   */
  awaitMaterialized(deadlineMs: number): Promise<void>;
  /*
   * The worker controls below make up the `capture` capability; a server
   * declaring it offers all four. While stopped or killed, awaitMaterialized
   * should fail promptly rather than wait out its deadline.
   */
  /** Lets the transaction being materialized finish, then nothing more is read or acknowledged until restartWorker. */
  stopWorker?(): Promise<void>;
  /** Ends the worker abruptly (its database sessions cut, no clean shutdown): open work rolls back. */
  killWorker?(): Promise<void>;
  /** Starts the worker again after a stop or a kill; it resumes from its durable progress and catches up. */
  restartWorker?(): Promise<void>;
  /** Makes the next source transaction with row events fail, so it is quarantined and blocks later ones until a retry succeeds. */
  injectPoison?(): Promise<void>;
  /**
   * Kills the worker (as killWorker) at `point` of the next source
   * transaction with row events it materializes: right after the
   * materialization commit, after the slot advance, or after the
   * acknowledgement record. Resolves once armed; restartWorker recovers.
   */
  killWorkerAt?(point: CaptureCrashPoint): Promise<void>;
  /**
   * Makes the worker wait just before the materialization commit of the next
   * source transaction with row events, with everything of it written and
   * nothing committed. restartWorker lets it commit; killWorker (which first
   * waits until the worker holds) ends it there, so the transaction rolls
   * back. While it holds, awaitMaterialized fails at once. Optional within
   * `capture`: scenarios needing it are undetermined without it.
   */
  holdBeforeCommit?(): Promise<void>;
  /** Resolves once the worker waits at the hold holdBeforeCommit armed; rejects when it does not get there in time. */
  awaitHold?(deadlineMs: number): Promise<void>;
  /**
   * The operator's stream reset: a new stream generation whose baseline is the
   * source state at one boundary, leaving any quarantine behind. Every earlier
   * cursor and rebuild session goes stale. Resolves once capture runs on the
   * new stream. Optional within `capture`.
   */
  resetStream?(): Promise<void>;
  /**
   * The operator's stream reset phase by phase (durable phases `preparing`,
   * `baseline_staged`, `catching_up`, then activation). Optional within
   * `capture`: phased reset scenarios are undetermined without it.
   */
  reset?: PhasedResetControl;
  /**
   * An operator's damage to what capture stored for one effect, and its
   * repair. Optional within `capture`: scenarios that need it are
   * undetermined without it.
   */
  store?: CaptureStoreControl;
  /**
   * The Class 3 projection bootstrap phase by phase (durable phases
   * `preparing`, `baseline_staged`, `catching_up`, then activation).
   * Optional within `capture`: SYNC-SCOPE-006 is undetermined without it.
   */
  bootstrap?: ProjectionBootstrapControl;
}

/** What `capture.store-fault` does to the latest captured effect of one row in one scope. */
export type CaptureStoreFault = 'projection_missing' | 'digest_overwritten';

export interface CaptureStoreControl {
  /** Damages the latest captured effect of key `pk` (wire key value) of table `table` (table ID) in `scope`. */
  inject(fault: CaptureStoreFault, target: { table: string; scope: string; pk: string | number }): Promise<void>;
  /** Writes back exactly what every injected fault damaged; resolves the number of effects restored. */
  restore(): Promise<number>;
}

/** Where a projection bootstrap stands after a control call. */
export interface BootstrapProgressAnswer {
  bootstrap_id: string;
  lifecycle: ResetHoldPhase | 'activated' | 'aborted';
  slot: string | null;
  reason?: string;
}

/** A drive of the bootstrap either moved it (progress) or its activation was refused (it stays in flight). */
export type BootstrapDriveOutcome = { progress: BootstrapProgressAnswer; refused?: undefined } | { refused: string; progress?: undefined };

export interface ProjectionBootstrapControl {
  /** Holds the bootstrap in flight (or the one the registry made due) once `phase` is durable; `pastDurableBarrier` catches up past the main worker's durable end. */
  hold(phase: ResetHoldPhase, options?: { pastDurableBarrier?: boolean }): Promise<BootstrapDriveOutcome>;
  /** Clears the hold and runs the bootstrap through activation. */
  release(): Promise<BootstrapDriveOutcome>;
  /** Resumes the bootstrap in flight from its durable record (a new one after an abort) through activation. */
  resume(): Promise<BootstrapDriveOutcome>;
  /** Asks for activation only; refused when the main worker has not made the barrier durable. */
  activate(): Promise<BootstrapDriveOutcome>;
  /** Terminates the coordinator's database sessions; resolves with how many ended. */
  kill(): Promise<number>;
}

/** A phase an operator's reset can be held at once it is durable. */
export type ResetHoldPhase = 'preparing' | 'baseline_staged' | 'catching_up';

/** Where a reset stands after a control call. */
export interface ResetProgressAnswer {
  reset_id: string;
  lifecycle: ResetHoldPhase | 'activated' | 'aborted';
  slot: string;
  /** Why it ended aborted. */
  reason?: string;
  stream_generation?: string;
  generation_start_lsn?: string;
}

/** A drive of the reset either moved it (progress) or its activation was refused (the reset stays in flight). */
export type ResetDriveOutcome = { progress: ResetProgressAnswer; refused?: undefined } | { refused: string; progress?: undefined };

export interface PhasedResetControl {
  /** Starts a reset and runs it until `holdAt` is durable, or through activation without it. */
  start(holdAt?: ResetHoldPhase): Promise<ResetDriveOutcome>;
  /** Resumes the reset in flight from its durable record, until `holdAt` or through activation; a reset whose snapshot was lost before staging ends aborted. */
  continue(holdAt?: ResetHoldPhase): Promise<ResetDriveOutcome>;
  /** Aborts the reset in flight; the old stream goes on. */
  abort(): Promise<void>;
  /** Terminates the operator's session (its database connections, the slot's replication connection included); resolves with how many ended. */
  killOperator(): Promise<number>;
}

/** The server's clock for protocol decisions (`server_time`, expiry, lifetimes). */
export interface ClockControl {
  /** Moves the clock forward; time keeps flowing from there. */
  advance(milliseconds: number): Promise<void>;
  /** Puts the clock at a UTC instant (`YYYY-MM-DDTHH:MM:SS[.fraction]Z`). */
  set(instant: string): Promise<void>;
  /** The server's current time as an ISO instant. */
  now(): Promise<string>;
}

export interface ClientsControl {
  /** Expires the client whatever its age: its next push, pull or rebuild gets `409 client_generation_expired`. */
  expire(userId: string, clientId: string): Promise<void>;
  /** Irreversible: every later request of the identity is `409 client_retired`. */
  retire(userId: string, clientId: string): Promise<void>;
  /** Applies the stale-client rule at the server's current time; returns the clients it expired. */
  runExpiry(): Promise<{ userId: string; clientId: string }[]>;
  /**
   * Reads a client's two server-side counters, first setting those in `set`
   * (a client-state control, to put a counter at the top of its range).
   * Optional: a scenario needing it is undetermined without it.
   */
  counters?(userId: string, clientId: string, set?: { clientGeneration?: number; scopeSetVersion?: number }): Promise<{ clientGeneration: number; scopeSetVersion: number }>;
}

export interface CompactionControl {
  compact(batchSize?: number): Promise<unknown>;
}

/** Operational output the server wrote during the scenario (for redaction checks). */
export interface LogsControl {
  /** Everything the server logged since the scenario's server was opened. */
  text(): Promise<string>;
  /** Optional: every metric the server exports, in the Prometheus text exposition format (`logs.metrics`). */
  metrics?(): Promise<string>;
  /** Optional: every trace span the server exported (`logs.spans`); empty for a server that exports none. */
  spans?(): Promise<TraceSpan[]>;
}

/** One exported trace span: its name and attributes. */
export interface TraceSpan {
  name: string;
  attributes: Record<string, string | number | boolean>;
}

/** Implementation-internal observations (readiness detail, metadata tables). */
export interface InspectControl {
  readiness(): Promise<unknown>;
  healthDetail(): Promise<unknown>;
  query<R extends Row = Row>(sql: string, params?: readonly unknown[]): Promise<R[]>;
}

/** What one portable seed export returned: the manifest and every page fetched, by scope, as the server produced them. */
export interface SeedExport {
  manifest: unknown;
  pages: Record<string, unknown[]>;
}

/**
 * Portable seed export. `export` runs one whole export in one transaction:
 * the manifest with `pageLimit` (server default when absent), then every
 * page of each scope in `scopes` (all portable scopes when absent),
 * following the page tokens. A refused export rejects with the server's
 * reason in the message.
 */
export interface SeedControl {
  export(options?: { pageLimit?: number; scopes?: string[] }): Promise<SeedExport>;
  /**
   * Optional: builds a portable seed artifact (a client database file) from
   * every portable scope and publishes it at `out` only after all of the
   * exporter's checks pass. `faults` names exporter faults to inject (the
   * adapter's own names; the conformance steps no longer use them).
   * `intercept` lets the harness damage or stop the export from outside at
   * the points `artifactIntercepts` lists. A refusal resolves `ok: false`
   * with the check that refused; `out` is then as it was.
   */
  exportArtifact?(options: { out: string; pageLimit?: number; faults?: string[]; intercept?: SeedArtifactIntercept }): Promise<SeedArtifactResult>;
  /**
   * Optional: the points at which `exportArtifact` lets the harness reach
   * into a running export from outside the exporter (`intercept`); none when
   * absent. A scenario that needs a point the adapter does not list is
   * undetermined.
   */
  readonly artifactIntercepts?: readonly SeedArtifactInterceptPoint[];
  /**
   * Optional: a seed session, the connection an exporter makes its seed calls
   * on, one at a time (the seed SQL functions of the 005 sheet,
   * `synchro_portable_seed_manifest` and `synchro_portable_seed_scope`):
   * transaction control statements, the manifest call and page calls. The
   * transaction a statement begins stays open across calls until a statement
   * ends it or the session closes. The adapter closes sessions left open when
   * the scenario's server closes.
   */
  session?(): Promise<SeedSession>;
}

/** What one seed session call answered: the value, the seed function's refusal, or an SQL-level failure. */
export type SeedCallResult = { ok: true; value: unknown } | { ok: false; error: { code: string; message: string } } | { ok: false; sql_error: { sqlstate: string; message: string } };

export interface SeedSession {
  /** A transaction control statement (BEGIN ..., COMMIT, ROLLBACK). */
  statement(sql: string): Promise<SeedCallResult>;
  /** The seed manifest function with `pageLimit` (the server's default when absent). */
  manifest(pageLimit?: number): Promise<SeedCallResult>;
  /** The seed scope function: one page of `scope` at `expectedRowOrdinal`. */
  page(call: { scope: string; pageToken: string; continuationReceipt: string | null; expectedRowOrdinal: number; limit?: number }): Promise<SeedCallResult>;
  close(): Promise<void>;
}

export type SeedArtifactInterceptPoint = 'exported' | 'written' | 'verifying' | 'hashed';

/**
 * What the exporter received from the server, as the exporter holds it
 * before any check: the seed manifest, every page of each portable scope
 * with the token that fetched it and the ordinal asked for, the portable
 * scopes the server declares and the published schema manifest the export
 * names.
 */
export interface DeliveredSeedExport {
  manifest: { portable_scopes: { id: string; continuation: string; [member: string]: unknown }[]; [member: string]: unknown };
  pages: Record<string, { token: string; ordinal: number; page: { scope: string; records: DeliveredSeedRecord[]; page_token: string | null; has_more: boolean } }[]>;
  declaredScopes: string[];
  schemaManifest: unknown;
}

export interface DeliveredSeedRecord {
  table: string;
  pk: Record<string, unknown>;
  row_checksum: unknown;
  server_version?: string;
  row: Record<string, unknown>;
}

/**
 * The harness reaching into one artifact export from outside the exporter,
 * as a damaged transfer, a damaged disk or a crash would. Each hook runs
 * while the exporter waits at that point; the exporter then goes on.
 */
export interface SeedArtifactIntercept {
  /** The export as delivered, before any exporter check; the exporter goes on with what this returns. */
  exported?(delivered: DeliveredSeedExport): DeliveredSeedExport | Promise<DeliveredSeedExport>;
  /** The artifact is written at `path` (its temporary place) and not yet verified; the hook may change the file. */
  written?(path: string): void | Promise<void>;
  /** Kill the process doing the build with SIGKILL while it verifies the written file. */
  killWhileVerifying?: boolean;
  /** The exporter recorded `sha256` as release evidence for the file at `path` and is about to publish it; the hook may change the file. */
  hashed?(path: string, sha256: string): void | Promise<void>;
}

/**
 * What a seed artifact build reported: the release evidence and the manifest
 * entry of each scope, or the refusing check. `killed` is set when the
 * adapter killed the build as `killWhileVerifying` asked and saw that
 * process end before the exporter answered.
 */
export type SeedArtifactResult =
  | {
      ok: true;
      sha256: string;
      schema: { version: number; hash: string };
      scopes: { id: string; cardinality: number; checksum: string }[];
      /** Optional: the export manifest the artifact was built from, as the server issued it, without page tokens. */
      exportManifest?: Record<string, unknown>;
    }
  | { ok: false; check: string; message: string; killed?: { pid: number; signal: 'SIGKILL' } };

/**
 * The server's own process, offered only when the scenario asked for one
 * (`ScenarioSetup.ownProcess`), so a scenario can kill the server for real.
 */
export interface ServerProcessControl {
  /** SIGKILL: no handler of the server runs; resolves once the process has exited. */
  kill(): Promise<void>;
  /** Starts the server again on the same database and the same `baseUrl`; resolves once it listens. */
  restart(): Promise<void>;
}

/**
 * The server's source database in a cluster of its own, offered only when the
 * scenario asked for one (`ScenarioSetup.ownDatabase`), so a scenario can
 * crash the database without touching other scenarios' databases.
 */
export interface DatabaseCrashControl {
  /**
   * Shuts the cluster down immediately (as `pg_ctl stop -m immediate`: no
   * checkpoint, so the next start runs crash recovery) and starts it again on
   * the same address; resolves once it accepts connections. The server's
   * process keeps running and must reconnect on its own.
   */
  restartImmediately(): Promise<void>;
  /**
   * Optional: a session, as the cluster's superuser, in another database of
   * this cluster (created empty on first use), for a scenario that puts
   * something beside the server's database, such as a replication slot of a
   * name the server uses. Closed with the scenario's server.
   */
  sessionInOtherDatabase?(database: string): Promise<SourceSqlSession>;
}

/** One external connection tried under the worker login: its kind, the secret offered, the database and the transport. */
export interface WorkerConnectionAttempt {
  kind: 'sql' | 'replication';
  secret: 'managed' | 'wrong' | 'none';
  /** `configured`: the server's own database; otherwise a database name. */
  database: 'configured' | { name: string };
  transport: 'tcp' | 'local-socket';
}

export type WorkerConnectionOutcome = { connected: true } | { connected: false; sqlstate: string | undefined; message: string };

/**
 * External connections under the worker login (SYNC-OPS-002): the adapter
 * knows the deployment-managed credential and applies the deployment's HBA
 * rules for that login; the harness only learns whether each attempt got in.
 * A connection that gets in runs one statement (`SELECT 1`, or
 * `IDENTIFY_SYSTEM` on a replication connection) before it is closed.
 */
export interface WorkerConnectionControl {
  attempt(attempt: WorkerConnectionAttempt): Promise<WorkerConnectionOutcome>;
}

/**
 * The network peers of the server's own process, observed from outside it
 * (the reference adapter attaches strace to the process). Offered only when
 * the scenario asked for it (`ScenarioSetup.network`).
 */
export interface NetworkControl {
  /** The database endpoints the server is configured with, as `host:port`. */
  readonly databaseEndpoints: readonly string[];
  /** `database-only`: every outbound connection except to a database endpoint is refused while the server runs. */
  readonly egress: 'open' | 'database-only';
  /**
   * The network activity of the server process from `from` to `until`
   * (epoch milliseconds), resolving once the observation has reached
   * `until`; rejects when it does not within `deadlineMs`.
   */
  activity(from: number, until: number, deadlineMs: number): Promise<NetworkActivity[]>;
}

/** One outbound connection attempt or one send on a socket, as the process made it. */
export interface NetworkActivity {
  /** Epoch milliseconds. */
  at: number;
  kind: 'connect' | 'send';
  /** `host:port` of this end, when known (a send on a connected socket). */
  local?: string;
  /** `host:port` of the peer, or `unix:<path>`. */
  remote: string;
}

/** What one start attempt came to: the server came up (and was stopped), or it ended with `exit` first; `output` is what it wrote. */
export interface StartAttempt {
  started: boolean;
  exit?: string;
  output: string;
}

/** One scenario's server: isolated state, released by `close`. */
export interface ServerAdapter {
  readonly id: string;
  readonly capabilities: readonly ServerCapability[];
  /** Where the server listens (clients reach it through the proxy instead). */
  readonly baseUrl: string;
  /** A bearer credential identifying `userId`. */
  token(userId: string): Promise<string>;
  provision?: ProvisionControl;
  sourceSql?: SourceSqlControl;
  scopes?: ScopesControl;
  schema?: SchemaControl;
  capture?: CaptureControl;
  clock?: ClockControl;
  clients?: ClientsControl;
  compaction?: CompactionControl;
  logs?: LogsControl;
  inspect?: InspectControl;
  seed?: SeedControl;
  /** Present when the server runs in a process of its own for this scenario. */
  process?: ServerProcessControl;
  /** Present when the scenario's database runs in a cluster of its own (`ScenarioSetup.ownDatabase`). */
  database?: DatabaseCrashControl;
  /** Optional: external connections under the server's worker login, through the deployment's HBA rules (SYNC-OPS-002). */
  workerConnections?: WorkerConnectionControl;
  /**
   * Optional: starts another server of the same build on the scenario's
   * database with the given settings (by their command-line names, e.g.
   * `stale-client-interval`), to see whether it refuses them. A server that
   * comes up is stopped again at once.
   */
  attemptStart?(settings: Readonly<Record<string, string>>, deadlineMs: number): Promise<StartAttempt>;
  /** Present when the scenario asked to observe the server's network (`ScenarioSetup.network`). */
  network?: NetworkControl;
  /** Optional: a server shipped as a PostgreSQL extension (form `postgresql-extension`) offers its package and clean databases to install it into. */
  extension?: ExtensionControl;
  /** Stops what the scenario started and drops its state; safe to call twice. */
  close(): Promise<void>;
}

/**
 * The packaged PostgreSQL extension of a server built as one, and empty
 * databases on a PostgreSQL 18 server that reaches the package, to install
 * versions into and compare (SYNC-OPS-007). Every database it creates is
 * dropped when the adapter closes.
 */
export interface ExtensionControl {
  /** The extension's name, as `CREATE EXTENSION` takes it. */
  readonly name: string;
  /** The packaged files by file name: the control file and every install and update script. */
  files(): Promise<Record<string, string>>;
  /** A new, empty database (no extension, no Synchro object) whose sessions reach the package. */
  cleanDatabase(label: string): Promise<ExtensionDatabase>;
}

export interface ExtensionDatabase {
  readonly label: string;
  /** Runs `sql` as the installing superuser on a connection of its own; resolves the last statement's rows. */
  query(sql: string): Promise<Row[]>;
  /** Provisions what the extension expects to exist before CREATE EXTENSION: the group roles and this database's worker login. */
  provisionRoles(): Promise<{ workerLogin: string }>;
  /** As `sourceSql.asRole`, on this database. */
  asRole(role: DatabaseRole, sql: string): Promise<RoleStatementOutcome>;
}

/** Per-scenario facts an adapter needs to set up an isolated server. */
export interface ScenarioSetup {
  /** Unique, identifier-safe name for this scenario (database names derive from it). */
  name: string;
  /** Server fault switches to enable (`SYNCHRO_FAULTS`), for a sensitivity run. */
  faults: readonly string[];
  /** Milliseconds any wait of the setup may take. */
  deadlineMs: number;
  /**
   * Start the server in a process of its own (the reference adapter), for a
   * scenario that kills the server process for real; otherwise the adapter
   * may run it in a process it shares with earlier scenarios' servers.
   */
  ownProcess?: boolean;
  /**
   * Give the scenario's database a cluster of its own (and the server a
   * process of its own), for a scenario that crashes the database; one
   * cluster start per such scenario, so only those ask for it.
   */
  ownDatabase?: boolean;
  /**
   * Observe the network peers of the server's own process (`observe`), and
   * also refuse every outbound connection but the database's
   * (`database-only`). Implies a process of its own.
   */
  network?: 'observe' | 'database-only';
}
