/**
 * The capture worker's progress record and its slot as server inspection
 * shows them, for the acknowledgement checks of SYNC-CAP-005: one read
 * gives the progress row and the slot's confirmed position together, and a
 * scenario keeps what it read before tampering with the slot, so a later
 * check can tell whether the worker moved anything.
 */
import type { ServerAdapter } from '../../../harness/adapters/server.ts';
import { inspectRows } from '../capture/inspection.ts';
import type { SyncWorld } from '../world.ts';

export interface ProgressSample {
  generation: string;
  slot: string;
  generationStart: string;
  processed: string;
  acknowledged: string;
  materializedEnd: string | null;
  /** The active slot's confirmed position; null when the slot is gone. */
  confirmed: string | null;
  /** Comparisons made by the database (pg_lsn), so no position is compared as text. */
  startLeAck: boolean;
  ackLeProcessed: boolean;
  materializedLeProcessed: boolean;
  ackLeConfirmed: boolean | null;
  confirmedLeProcessed: boolean | null;
  confirmedEqAck: boolean | null;
}

export async function progressSample(world: SyncWorld): Promise<ProgressSample> {
  const [row] = await inspectRows<{
    g: string;
    slot: string;
    start: string;
    processed: string;
    ack: string;
    mat: string | null;
    confirmed: string | null;
    start_le_ack: boolean;
    ack_le_processed: boolean;
    mat_le_processed: boolean;
    ack_le_confirmed: boolean | null;
    confirmed_le_processed: boolean | null;
    confirmed_eq_ack: boolean | null;
  }>(
    world,
    `SELECT w.stream_generation AS g, w.slot_name AS slot, w.generation_start_lsn::text AS start, w.processed_end_lsn::text AS processed,
            w.acknowledged_end_lsn::text AS ack, w.materialized_end_lsn::text AS mat, s.confirmed_flush_lsn::text AS confirmed,
            w.generation_start_lsn <= w.acknowledged_end_lsn AS start_le_ack, w.acknowledged_end_lsn <= w.processed_end_lsn AS ack_le_processed,
            coalesce(w.materialized_end_lsn <= w.processed_end_lsn, true) AS mat_le_processed,
            w.acknowledged_end_lsn <= s.confirmed_flush_lsn AS ack_le_confirmed, s.confirmed_flush_lsn <= w.processed_end_lsn AS confirmed_le_processed,
            s.confirmed_flush_lsn = w.acknowledged_end_lsn AS confirmed_eq_ack
       FROM synchro.wal_progress w LEFT JOIN pg_replication_slots s ON s.slot_name = w.slot_name`,
  );
  if (row === undefined) throw new Error('server inspection shows no capture progress record: capture has not started');
  return {
    generation: row.g,
    slot: row.slot,
    generationStart: row.start,
    processed: row.processed,
    acknowledged: row.ack,
    materializedEnd: row.mat,
    confirmed: row.confirmed,
    startLeAck: row.start_le_ack,
    ackLeProcessed: row.ack_le_processed,
    materializedLeProcessed: row.mat_le_processed,
    ackLeConfirmed: row.ack_le_confirmed,
    confirmedLeProcessed: row.confirmed_le_processed,
    confirmedEqAck: row.confirmed_eq_ack,
  };
}

/** Whether `a <= b` as WAL positions. */
export async function lsnAtOrBefore(world: SyncWorld, a: string, b: string): Promise<boolean> {
  const [row] = await inspectRows<{ ok: boolean }>(world, 'SELECT $1::pg_lsn <= $2::pg_lsn AS ok', [a, b]);
  return row?.ok === true;
}

/** A sample taken right after a commit (the worker may be mid-transaction) or once capture caught up. */
export interface LabelledSample extends ProgressSample {
  when: 'after commit' | 'caught up';
  commit: number;
}

/** What a scenario keeps between its steps. */
interface AcknowledgementState {
  /** The insert position right after the last idle messages committed. */
  idleEnd?: string;
  samples?: LabelledSample[];
  seed?: number;
  /** The progress record and slot as they were right after the harness tampered with the slot. */
  tampered?: ProgressSample;
  /** Transaction records before the worker was restarted against the tampered slot. */
  transactionsBefore?: number;
}

const states = new WeakMap<SyncWorld, AcknowledgementState>();

export function acknowledgementState(world: SyncWorld): AcknowledgementState {
  let state = states.get(world);
  if (state === undefined) {
    state = {};
    states.set(world, state);
  }
  return state;
}

export function provisionOf(server: ServerAdapter) {
  if (!server.provision) throw new Error(`server adapter "${server.id}" has no provision capability to change capture state`);
  return server.provision;
}

export function captureOf(server: ServerAdapter) {
  if (!server.capture) throw new Error(`server adapter "${server.id}" has no capture capability`);
  return server.capture;
}

/** Stops the worker as a crash would, so its slot is free and its next start reconciles from scratch. */
export async function killWorker(server: ServerAdapter): Promise<void> {
  const kill = captureOf(server).killWorker;
  if (kill === undefined) throw new Error(`server adapter "${server.id}" offers no capture.killWorker()`);
  await kill.call(server.capture);
}
