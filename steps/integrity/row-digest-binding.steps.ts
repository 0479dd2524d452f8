/**
 * SYNC-INTEG-002 Row Digest Binding
 * (features/integrity/row-digest-binding.feature):
 * the steps only this requirement uses. Steps it shares with others are in
 * steps/common/, the helpers behind them in steps/support/.
 */
import { Given, Then, When } from '@cucumber/cucumber';
import { digestRow, fromHex, isJsonObject, type TableShape, toHex } from '../../harness/codec/index.ts';
import { processPhrase } from '../support/client-mode.ts';
import { assertCursorUnchanged } from '../support/integrity/client-state.ts';
import { clientExchanges, currentManifest, exchanges, integrity, manifests } from '../support/integrity/context.ts';
import { deliveredBody, fieldIdOf, type Manifest, type Obj, type RowMessage, rowMessages, serverBody, shapeOf, tableById, verifyRowMessage, wireText } from '../support/integrity/oracle.ts';
import { keyText, lastPullChange, outcomesOf, pushingClient } from '../support/integrity/row-digest.ts';
import { flipDigest } from '../support/integrity/tamper.ts';
import { arm, armRowEdit } from '../support/integrity/tampering.ts';
import { exportSchema, lastExport, recordsOf } from '../support/seeds/exports.ts';
import { exportScope } from '../support/seeds/seed-export.ts';
import type { SyncWorld } from '../support/world.ts';
import { exchangesIn } from '../support/exchanges.ts';

Given('table {string} also places rows whose {word} is {string} in scope {string}', function (this: SyncWorld, name: string, column: string, value: string, scope: string) {
  const table = this.model.table(name);
  if (table.installed) throw new Error(`table "${name}" is already on the server; write "table ${JSON.stringify(name)} now also places rows ..." to change its placement there`);
  table.conditional.push({ column, value, scope });
});

Then('the cursors client {string} stores for scopes {string} and {string} are unchanged', async function (this: SyncWorld, name: string, first: string, second: string) {
  await assertCursorUnchanged(this, name, first);
  await assertCursorUnchanged(this, name, second);
});

Then(/^client "([^"]+)" has neither row "([^"]+)" nor row "([^"]+)"$/, async function (this: SyncWorld, name: string, first: string, second: string) {
  const client = await this.process(name);
  for (const table of this.model.tables.values()) {
    const key = table.columns.find((c) => c.key)?.name ?? 'id';
    const rows = (await client.call<{ rows: Obj[] }>('query', { sql: `SELECT CAST("${key}" AS TEXT) AS id FROM "${table.name}" WHERE CAST("${key}" AS TEXT) IN (?, ?)`, params: [first, second] })).rows;
    this.assert.equal(rows, [], `client "${name}" holds rows of ${table.name} it should not`);
  }
});

Then(/^client "([^"]+)" still reports the mutation for row "([^"]+)" as not accepted$/, async function (this: SyncWorld, name: string, key: string) {
  const client = await this.process(name);
  const { mutations } = await client.call<{ mutations: Obj[] }>('inspectMutations');
  const mine = mutations.filter((m) => String(m.recordId ?? m.pk) === key);
  this.assert.ok(mine.length > 0, `client "${name}" still keeps the mutation for row ${key}: ${JSON.stringify(mutations)}`);
  for (const m of mine) this.assert.notEqual(m.status, 'accepted', `the mutation for row ${key} is reconciled as accepted`);
});

const HEX64 = /^[0-9a-f]{64}$/;

/** Row-bearing messages of the named client's exchanges on `endpoint`, newest exchange last. */
async function messagesOf(world: SyncWorld, name: string, endpoint: 'push' | 'pull' | 'rebuild'): Promise<RowMessage[]> {
  return rowMessages(await clientExchanges(world, name, endpoint));
}

Then(
  'each of the two outcomes has a "server_version", a "server_row" and a "row_checksum" that is exactly \\{"algorithm":"sha256","version":1,"encoding":"hex","digest":<64 lowercase hex>}',
  async function (this: SyncWorld) {
    const outcomes = await outcomesOf(this, await pushingClient(this));
    this.assert.equal(outcomes.length, 2, 'number of push outcomes recorded');
    for (const o of outcomes) {
      const id = String(o.raw.mutation_id);
      this.assert.ok(typeof o.serverVersion === 'string' && o.serverVersion !== '', `outcome ${id} has a nonempty server_version`);
      this.assert.ok(isJsonObject(o.row as never), `outcome ${id} has a server_row object`);
      const checksum = o.checksum as Obj | undefined;
      this.assert.ok(checksum !== undefined, `outcome ${id} has a row_checksum`);
      this.assert.equal(Object.keys(checksum).sort(), ['algorithm', 'digest', 'encoding', 'version'], `members of the row_checksum of outcome ${id}`);
      this.assert.equal(checksum.algorithm, 'sha256', `algorithm of outcome ${id}`);
      this.assert.equal(wireText(checksum.version), '1', `version of outcome ${id}`);
      this.assert.equal(checksum.encoding, 'hex', `encoding of outcome ${id}`);
      this.assert.match(String(checksum.digest), HEX64, `digest of outcome ${id}`);
    }
  },
);

Then("each outcome's digest equals the harness codec digest over its outcome_schema hash, table, pk, server_row and server_version", async function (this: SyncWorld) {
  const all = await manifests(this);
  const outcomes = await outcomesOf(this, await pushingClient(this));
  this.assert.ok(outcomes.length > 0, 'some push outcome was recorded');
  for (const o of outcomes) {
    const verdict = verifyRowMessage(all, o);
    this.assert.ok(verdict.ok, `outcome ${String(o.raw.mutation_id)}: ${verdict.problem ?? ''}`);
  }
});

Then(
  'every pull change with a "row" and every rebuild record has a "server_version" and a "row_checksum" whose digest equals the harness codec digest under the current manifest',
  async function (this: SyncWorld) {
    const all = await manifests(this);
    const current = await currentManifest(this);
    const recorded = await exchanges(this);
    // Both what the server sent and what its client received: no step of this scenario edits an answer, so the two must agree and both verify.
    const withRows = (read: typeof serverBody) => rowMessages(recorded, read).filter((m) => m.kind !== 'outcome' && m.row !== undefined);
    const sent = withRows(serverBody);
    const received = withRows(deliveredBody);
    this.assert.ok(sent.length > 0, 'some pull change or rebuild record with a row was recorded');
    this.assert.equal(received.length, sent.length, 'the client received every pull change and rebuild record with a row the server sent');
    for (const [m, as] of [...sent.map((m) => [m, 'sent'] as const), ...received.map((m) => [m, 'received'] as const)]) {
      const what = `${m.kind} for row ${keyText(m)} of table ${m.table} as ${as}`;
      this.assert.equal(m.schemaHash, current.schema_hash, `${what} is bound to the current manifest`);
      this.assert.ok(typeof m.serverVersion === 'string' && m.serverVersion !== '', `${what} has a server_version`);
      const verdict = verifyRowMessage(all, m);
      this.assert.ok(verdict.ok, `${what}: ${verdict.problem ?? ''}`);
    }
  },
);

Then(/^the pull change for row "([^"]+)" has op "delete" and carries its tombstone row with a verifying digest$/, async function (this: SyncWorld, key: string) {
  const [name] = [...this.clientUsers.keys()];
  const change = await lastPullChange(this, name ?? 'A', key);
  this.assert.equal(change.op, 'delete', `op of the change for row ${key}`);
  this.assert.ok(isJsonObject(change.row as never), `the delete of row ${key} carries its tombstone row`);
  const manifest = (await manifests(this)).get(change.schemaHash);
  if (manifest === undefined) throw new Error('the manifest of the pull is unknown');
  const table = tableById(manifest, change.table);
  const deletedAt = table.fields.find((f) => f.field_id === (table as unknown as { lifecycle?: { deleted_at_field_id?: string } }).lifecycle?.deleted_at_field_id);
  this.assert.ok(deletedAt !== undefined && (change.row as Obj)[deletedAt.field_id] !== null, `the tombstone row of ${key} has its deletion time set`);
  const verdict = verifyRowMessage(await manifests(this), change);
  this.assert.ok(verdict.ok, `tombstone of ${key}: ${verdict.problem ?? ''}`);
});

Then(/^the pull change for row "([^"]+)" of table "([^"]+)" has op "delete", a "server_version" and neither "row" nor "row_checksum"$/, async function (this: SyncWorld, key: string, tableName: string) {
  const [name] = [...this.clientUsers.keys()];
  const change = await lastPullChange(this, name ?? 'A', key, tableName);
  this.assert.equal(change.op, 'delete', `op of the change for row ${key}`);
  this.assert.ok(typeof change.serverVersion === 'string' && change.serverVersion !== '', `the delete of ${key} keeps its fence server_version`);
  this.assert.ok(!Object.hasOwn(change.raw, 'row'), `the rowless delete of ${key} has no "row"`);
  this.assert.ok(!Object.hasOwn(change.raw, 'row_checksum'), `the rowless delete of ${key} has no "row_checksum"`);
});

Then('the four row checksums reported for these outcomes are pairwise different', async function (this: SyncWorld) {
  const outcomes = (await outcomesOf(this, await pushingClient(this))).filter((o) => o.checksum !== undefined);
  this.assert.equal(outcomes.length, 4, 'outcomes with a row checksum');
  const digests = outcomes.map((o) => String((o.checksum as Obj).digest));
  this.assert.equal(new Set(digests).size, 4, `the four digests are pairwise different: ${digests.join(', ')}`);
});

/** Digest of a row with one bound input changed, computed by the codec. */
function variantDigests(manifest: Manifest, o: RowMessage): { what: string; digest: string }[] {
  const shape = shapeOf(manifest, o.table);
  const row = o.row as Obj;
  const version = String(o.serverVersion);
  const digest = (hash: string, s: TableShape, r: Obj, v: string) => toHex(digestRow({ schemaHash: hash, table: s, row: r, serverVersion: v }).digest);
  const flipped = toHex(fromHex(manifest.schema_hash).map((b, k) => (k === 0 ? b ^ 1 : b)));
  const pk = shape.pkFieldId;
  const other = [...shape.fields.keys()].find((f) => f !== pk && shape.fields.get(f)?.type === 'string') as string;
  const nullable = [...shape.fields.entries()].find(([f, spec]) => f !== pk && spec.nullable);
  const renamed = (s: TableShape, tableId: string, pkFieldId: string): TableShape => {
    const fields = new Map(s.fields);
    if (pkFieldId !== s.pkFieldId) {
      fields.set(pkFieldId, fields.get(s.pkFieldId) as never);
      fields.delete(s.pkFieldId);
    }
    return { ...s, tableId, pkFieldId, fields, bodyOrder: [...fields.keys()].sort() };
  };
  const rekeyed = (r: Obj, from: string, to: string) => {
    const copy = { ...r };
    copy[to] = copy[from];
    if (to !== from) delete copy[from];
    return copy;
  };
  const variants = [
    { what: 'the schema hash', digest: digest(flipped, shape, row, version) },
    { what: 'the table ID', digest: digest(manifest.schema_hash, renamed(shape, `${shape.tableId}x`, pk), row, version) },
    { what: 'the key field ID', digest: digest(manifest.schema_hash, renamed(shape, shape.tableId, `${pk}x`), rekeyed(row, pk, `${pk}x`), version) },
    { what: 'the key value', digest: digest(manifest.schema_hash, shape, { ...row, [pk]: `${String(row[pk])}x` }, version) },
    { what: 'a field value', digest: digest(manifest.schema_hash, shape, { ...row, [other]: `${String(row[other])}x` }, version) },
    { what: 'the server_version', digest: digest(manifest.schema_hash, shape, row, `${version}x`) },
  ];
  if (shape.pkType === 'string' && /^[0-9]+$/.test(String(row[pk]))) {
    const asInt = new Map(shape.fields);
    asInt.set(pk, { type: 'int64', nullable: false });
    variants.push({ what: 'the key type', digest: digest(manifest.schema_hash, { ...shape, pkType: 'int64', fields: asInt }, row, version) });
  } else {
    // Same key text under the other key type: int64 text "7" vs string "7" are different typed values.
    const keyText = /^-?[0-9]+$/.test(String(row[pk])) ? String(row[pk]) : '7';
    const asString = new Map(shape.fields);
    asString.set(pk, { type: shape.pkType === 'string' ? 'int64' : 'string', nullable: false });
    const base = digest(manifest.schema_hash, shape, { ...row, [pk]: shape.pkType === 'int' ? Number(keyText) : keyText }, version);
    const retyped = digest(manifest.schema_hash, { ...shape, pkType: shape.pkType === 'string' ? 'int64' : 'string', fields: asString }, { ...row, [pk]: keyText }, version);
    variants.push({ what: 'the key type (same key text)', digest: retyped === base ? o.checksum === undefined ? '' : String((o.checksum as Obj).digest) : retyped });
  }
  if (nullable !== undefined) {
    const [field] = nullable;
    variants.push({ what: 'a null state', digest: digest(manifest.schema_hash, shape, { ...row, [field]: row[field] === null ? (nullable[1].type === 'datetime' ? '2026-01-01T00:00:00.000000Z' : 'x') : null }, version) });
  }
  return variants;
}

Then(
  'for each of them, changing any one of the schema hash, table ID, key field ID, key type, key value, a field value, a null state or the server_version in the codec input gives a digest different from the reported one',
  async function (this: SyncWorld) {
    const all = await manifests(this);
    const outcomes = (await outcomesOf(this, await pushingClient(this))).filter((o) => o.checksum !== undefined);
    this.assert.ok(outcomes.length > 0, 'some outcome with a row checksum');
    for (const o of outcomes) {
      const verdict = verifyRowMessage(all, o);
      this.assert.ok(verdict.ok, `outcome ${String(o.raw.mutation_id)} verifies before any change: ${verdict.problem ?? ''}`);
      const manifest = all.get(o.schemaHash) as Manifest;
      for (const v of variantDigests(manifest, o)) {
        this.assert.notEqual(v.digest, String((o.checksum as Obj).digest), `changing ${v.what} of outcome ${String(o.raw.mutation_id)} changes its digest`);
      }
    }
  },
);

Given(/^client "([^"]+)" has pushed an insert of row "([^"]+)" and holds its row checksum (\w+)$/, async function (this: SyncWorld, name: string, key: string, label: string) {
  const wire = this.wire(name);
  const table = wire.manifest?.tables.find((t) => t.fields.some((f) => f.name === 'title')) ?? wire.manifest?.tables[0];
  if (table === undefined) throw new Error(`client "${name}" has no manifest yet`);
  const columns: Record<string, unknown> = {};
  for (const f of table.fields) if (f.field_id !== table.primary_key_field_id && f.writable && !f.nullable) columns[f.name] = f.name === 'owner_id' ? wire.userId : `${key} ${f.name}`;
  const reply = await wire.push([wire.mutation({ op: 'insert', table: table.name, pk: key, columns })]);
  this.assert.equal(reply.status, 200, `push of row ${key}: ${reply.text}`);
  const outcome = reply.json.accepted?.[0];
  this.assert.ok(outcome?.row_checksum !== undefined, `the insert of ${key} was applied with a row checksum: ${reply.text}`);
  integrity(this).noted.set(label, { key, checksum: outcome.row_checksum, version: outcome.server_version, schema: outcome.outcome_schema });
});

Then(/^the rebuild record for row "([^"]+)" has a row checksum different from (\w+) that verifies under the new manifest$/, async function (this: SyncWorld, key: string, label: string) {
  const noted = integrity(this).noted.get(label) as { checksum: Obj; schema: { hash: string } } | undefined;
  if (noted === undefined) throw new Error(`${label} was not noted`);
  const current = await currentManifest(this);
  this.assert.notEqual(current.schema_hash, noted.schema.hash, 'the server now publishes another manifest');
  const [name] = [...this.clientUsers.keys()];
  const records = (await messagesOf(this, name ?? 'A', 'rebuild')).filter((r) => keyText(r) === key && r.schemaHash === current.schema_hash);
  const record = records[records.length - 1];
  this.assert.ok(record !== undefined, `a rebuild record for row ${key} under the new manifest was recorded`);
  this.assert.notEqual((record.checksum as Obj).digest, noted.checksum.digest, `the digest of ${key} under the new manifest differs from ${label}`);
  const verdict = verifyRowMessage(await manifests(this), record);
  this.assert.ok(verdict.ok, `the rebuild record for ${key} verifies: ${verdict.problem ?? ''}`);
});

Given(/^client "([^"]+)" has pushed an update of row "([^"]+)" to title "([^"]*)" and holds its server version (\w+)$/, async function (this: SyncWorld, name: string, key: string, title: string, label: string) {
  const wire = this.wire(name);
  const outcomes = await outcomesOf(this, name);
  const previous = [...outcomes].reverse().find((o) => keyText(o) === key && typeof o.serverVersion === 'string');
  if (previous === undefined) throw new Error(`client "${name}" holds no version of row ${key}`);
  const table = tableById((await manifests(this)).get(previous.schemaHash) as Manifest, previous.table);
  const reply = await wire.push([wire.mutation({ op: 'update', table: table.name, pk: key, columns: { title }, base_version: String(previous.serverVersion) })]);
  this.assert.equal(reply.status, 200, `push of the update of ${key}: ${reply.text}`);
  const outcome = reply.json.accepted?.[0];
  this.assert.ok(outcome?.status === 'applied', `the update of ${key} was applied: ${reply.text}`);
  integrity(this).noted.set(label, outcome.server_version);
});

Then(/^the pull change for row "([^"]+)" of table "([^"]+)" has "server_version" equal to (\w+)$/, async function (this: SyncWorld, key: string, tableName: string, label: string) {
  const expected = integrity(this).noted.get(label);
  if (expected === undefined) throw new Error(`${label} was not noted`);
  const [name] = [...this.clientUsers.keys()];
  const change = await lastPullChange(this, name ?? 'A', key, tableName);
  integrity(this).lastMessage = change;
  this.assert.equal(change.serverVersion, expected, `server_version of the pull change for ${key}`);
});

Then(/^its row has "([^"]+)" equal to "([^"]*)"$/, async function (this: SyncWorld, column: string, value: string) {
  const message = integrity(this).lastMessage;
  if (message === undefined) throw new Error('no change was singled out by an earlier step');
  const manifest = (await manifests(this)).get(message.schemaHash) as Manifest;
  const fieldId = fieldIdOf(tableById(manifest, message.table), column);
  this.assert.equal((message.row as Obj | undefined)?.[fieldId], value, `${column} of the row of ${keyText(message)}`);
  const verdict = verifyRowMessage(await manifests(this), message);
  this.assert.ok(verdict.ok, `its row checksum verifies: ${verdict.problem ?? ''}`);
});

Then(
  'across every push outcome, pull change and rebuild record recorded in this run, "row_checksum" is present exactly when "server_row" or "row" is present',
  async function (this: SyncWorld) {
    const all = await exchanges(this);
    let withRow = 0;
    let rowless = 0;
    for (const endpoint of ['push', 'pull', 'rebuild'] as const) {
      for (const e of exchangesIn(all, { endpoints: [endpoint] })) {
        const body = serverBody(e);
        if (body === undefined) continue;
        const items = endpoint === 'push' ? [...((body.accepted as Obj[]) ?? []), ...((body.rejected as Obj[]) ?? [])] : endpoint === 'pull' ? ((body.changes as Obj[]) ?? []) : ((body.records as Obj[]) ?? []);
        for (const item of items) {
          const hasRow = Object.hasOwn(item, endpoint === 'push' ? 'server_row' : 'row');
          if (hasRow) withRow += 1;
          else rowless += 1;
          this.assert.equal(Object.hasOwn(item, 'row_checksum'), hasRow, `${endpoint} message for row ${keyText(item)} (exchange #${e.seq}): row_checksum present exactly with the row`);
        }
      }
    }
    // Both kinds must have crossed the wire, or the rule was not exercised.
    this.assert.ok(withRow > 0 && rowless > 0, `the run recorded messages with a row (${withRow}) and without one (${rowless})`);
  },
);

processPhrase(/^the proxy will (?:apply|flip|replace|set the "type").* (?:to|for) client "([^"]+)"/);

Given(/^the proxy will apply (.+) to the record for row "([^"]+)" in the next rebuild response to client "([^"]+)", keeping its row checksum$/, async function (this: SyncWorld, edit: string, key: string, name: string) {
  await armRowEdit(this, name, 'rebuild', edit, key, 'keep');
});

Given(/^the proxy will flip one hex digit of the "row_checksum" digest of the change for row "([^"]+)" in the next pull response to client "([^"]+)"$/, async function (this: SyncWorld, key: string, name: string) {
  await armRowEdit(this, name, 'pull', 'flipping one hex digit of its "row_checksum" digest', key, 'none');
});

Given(/^the proxy will flip one hex digit of the "row_checksum" digest of the first accepted outcome in the next push response to client "([^"]+)"$/, async function (this: SyncWorld, name: string) {
  await arm(this, name, 'push', 'flip the digest of the first accepted outcome', (json) => {
    const first = ((json.accepted ?? []) as Obj[]).find((o) => o.row_checksum !== undefined);
    if (first === undefined) return undefined;
    flipDigest(first.row_checksum as Obj);
    return json;
  });
});

When('the harness exports the portable seed pages of scope {string} in one seed export transaction', async function (this: SyncWorld, scope: string) {
  await exportScope(this, scope, undefined);
});

Then('every seed record has a "server_version" and a "row_checksum" whose digest equals the harness codec digest under the export\'s schema hash', async function (this: SyncWorld) {
  const done = lastExport(this);
  const manifest = await exportSchema(this, done);
  this.assert.ok(manifest !== undefined, "the export's schema hash names a manifest the server published");
  if (manifest === undefined) return;
  const records = recordsOf(done, done.scope);
  this.assert.ok(records.length > 0, `the export of ${done.scope} returned records`);
  const known = new Map([[manifest.schema_hash, manifest]]);
  for (const r of records) {
    const what = `seed record ${JSON.stringify(r.pk)} of table ${String(r.table)}`;
    this.assert.ok(typeof r.server_version === 'string' && r.server_version !== '', `${what} has a server_version`);
    const verdict = verifyRowMessage(known, { kind: 'record', schemaHash: manifest.schema_hash, table: String(r.table), pk: r.pk, row: r.row, serverVersion: r.server_version, checksum: r.row_checksum, raw: r });
    this.assert.ok(verdict.ok, `${what}: ${verdict.problem ?? ''}`);
  }
});
