/**
 * Shared test fixtures: a two-table manifest (orders with soft delete, notes
 * with hard delete), an instant clock, and helpers that open clients against
 * the fake server.
 */
import { join } from 'node:path';
import { schemaManifestHash } from '../../harness/codec/index.ts';
import type { SchemaManifest } from '../../harness/wire/generated.ts';
import { type OpenOptions, SynchroClient } from '../../reference/client/client.ts';
import type { Clock } from '../../reference/client/context.ts';
import { httpTransport } from '../../reference/client/sync/transport.ts';
import { scratchDir } from '../support/scratch-dir.ts';
import type { FakeServer } from './fake-server.ts';

export function manifest(version = 1, extra = false): SchemaManifest {
  const body: Omit<SchemaManifest, 'schema_hash'> = {
    schema_version: version,
    parent_schema: null,
    transition_class: 'initial',
    compatibility_floor: version,
    tables: [
      {
        table_id: 'tbl_notes',
        relation_id: 'public.notes',
        name: 'notes',
        primary_key_field_id: 'fld_notes_id',
        lifecycle: { created_at_field_id: null, updated_at_field_id: null, deleted_at_field_id: null },
        composition: 'single_scope',
        fields: [
          { field_id: 'fld_notes_body', name: 'body', type: 'string', nullable: true, writable: true },
          { field_id: 'fld_notes_id', name: 'id', type: 'int', nullable: false, writable: false },
        ],
        indexes: [],
      },
      {
        table_id: 'tbl_orders',
        relation_id: 'public.orders',
        name: 'orders',
        primary_key_field_id: 'fld_orders_id',
        lifecycle: { created_at_field_id: null, updated_at_field_id: 'fld_orders_updated_at', deleted_at_field_id: 'fld_orders_deleted_at' },
        composition: 'multi_scope',
        fields: [
          { field_id: 'fld_orders_deleted_at', name: 'deleted_at', type: 'datetime', nullable: true, writable: false },
          { field_id: 'fld_orders_id', name: 'id', type: 'string', nullable: false, writable: false },
          { field_id: 'fld_orders_paid', name: 'paid', type: 'boolean', nullable: true, writable: true },
          { field_id: 'fld_orders_qty', name: 'qty', type: 'int', nullable: true, writable: true },
          { field_id: 'fld_orders_title', name: 'title', type: 'string', nullable: true, writable: true },
          { field_id: 'fld_orders_updated_at', name: 'updated_at', type: 'datetime', nullable: true, writable: false },
        ],
        indexes: [],
      },
    ],
  };
  if (extra) {
    (body.tables[1]?.fields ?? ([] as unknown[])).push({ field_id: 'fld_orders_zone', name: 'zone', type: 'string', nullable: true, writable: true });
  }
  return { ...body, schema_hash: schemaManifestHash(body).hash } as SchemaManifest;
}

/** A clock whose sleep advances virtual time instantly and records each wait. */
export function instantClock(): Clock & { slept: number[] } {
  // Virtual time: it moves only when the client sleeps.
  let at = Date.now();
  const slept: number[] = [];
  return {
    slept,
    now: () => at,
    sleep: async (ms) => {
      slept.push(ms);
      at += ms;
    },
  };
}

export function tempDb(): string {
  return join(scratchDir('synchro-client-'), 'client.db');
}

export function openClient(server: FakeServer, clientId: string, extra: Partial<OpenOptions> = {}): SynchroClient {
  return SynchroClient.open({ path: ':memory:', transport: httpTransport(server.url, () => 'token'), clientId, clock: instantClock(), random: () => 0.5, ...extra });
}

/** Request paths in order, for ordering checks. */
export function paths(server: FakeServer): string[] {
  return server.requests.map((r) => r.path.replace('/sync/', ''));
}
