/**
 * The transaction of one seed export and the state it carries. Every call
 * first checks the transaction is serializable, read only and deferrable;
 * the first manifest call stores the export's state in the transaction-local
 * setting `synchro.seed_export_state`, sealed with the seed key and bound to
 * this transaction, so it vanishes at commit or rollback and a later
 * transaction, even on the same connection, cannot present it.
 */
import type { ClientBase } from 'pg';
import { fault } from '../core/faults.ts';
import { type SeedKey, seedKey } from '../core/seed-keys.ts';
import { macMatches, open, seal } from '../core/signed-token.ts';
import { SeedRequestError, SeedTransactionError } from './errors.ts';
import type { SeedManifest } from './manifest-shape.ts';

/** How a caller opens the one transaction an export runs in. */
export const EXPORT_TRANSACTION = 'BEGIN ISOLATION LEVEL SERIALIZABLE READ ONLY DEFERRABLE';

const SETTING = 'synchro.seed_export_state';
const DOMAIN = 'synchro:v3:seed-export-session:v1';

export async function requireExportTransaction(db: ClientBase): Promise<void> {
  const { rows } = await db.query<{ iso: string; ro: string; d: string }>(
    "SELECT current_setting('transaction_isolation') AS iso, current_setting('transaction_read_only') AS ro, current_setting('transaction_deferrable') AS d",
  );
  const r = rows[0];
  if (fault('seed004-mode-check-isolation-only') && r?.iso === 'serializable') return; // fault: server:seed004-mode-check-isolation-only
  if (r?.iso !== 'serializable' || r.ro !== 'on' || r.d !== 'on') {
    throw new SeedTransactionError(`a seed export needs a SERIALIZABLE READ ONLY DEFERRABLE transaction (this one is ${r?.iso}, read_only=${r?.ro}, deferrable=${r?.d})`);
  }
}

/** Identity of the running transaction: its transaction ID and the backend serving it. */
async function transactionIdentity(db: ClientBase): Promise<string> {
  const { rows } = await db.query<{ id: string }>("SELECT pg_current_xact_id()::text || '@' || pg_backend_pid()::text AS id");
  return rows[0]?.id ?? '';
}

export interface ExportState {
  keyId: string;
  nonce: string;
  pageLimit: number;
  manifest: SeedManifest;
}

export async function saveState(db: ClientBase, key: SeedKey, state: ExportState): Promise<void> {
  const sealed = seal('ss1', DOMAIN, key, { kind: 'seed_export_session', version: 1, key_id: key.keyId, transaction: await transactionIdentity(db), state });
  await db.query('SELECT set_config($1, $2, true)', [SETTING, sealed]);
}

/** The state of the export running in this transaction, or undefined when none was started here. */
export async function loadState(db: ClientBase): Promise<ExportState | undefined> {
  const { rows } = await db.query<{ v: string | null }>('SELECT current_setting($1, true) AS v', [SETTING]);
  const text = rows[0]?.v;
  if (text === undefined || text === null || text === '') return undefined;
  const opened = open('ss1', text);
  const keyId = opened?.value.key_id;
  const key = typeof keyId === 'string' ? await seedKey(db, keyId) : undefined;
  if (opened === undefined || key === undefined || !macMatches(DOMAIN, key, opened) || opened.value.transaction !== (await transactionIdentity(db))) {
    throw new SeedRequestError('the seed export state of this transaction is not valid');
  }
  return opened.value.state as ExportState;
}
