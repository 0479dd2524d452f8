/**
 * SYNC-INTEG-001 Canonical Typed Row Encoding
 * (features/integrity/canonical-typed-row-encoding.feature):
 * the steps only this requirement uses. Steps it shares with others are in
 * steps/common/, the helpers behind them in steps/support/.
 */
import { randomUUID } from 'node:crypto';
import { Given, Then, When } from '@cucumber/cucumber';
import fc from 'fast-check';
import { canonicalJson, isWellFormedText, type JsonValue, parseJson, schemaManifestHashUnchecked, validateCanonicalJsonText } from '../../harness/codec/index.ts';
import { jsonLiteral, RawJson, serializeJson } from '../../harness/proxy/rewrite.ts';
import { processPhrase } from '../support/client-mode.ts';
import { clientExchanges, exchanges, integrity, manifests } from '../support/integrity/context.ts';
import { fieldIdOf, type Manifest, type ManifestTable, type Obj, rowMessages, scopeDigestHex, serverBody, tableById, tableByName, verifyRowMessage, wireText } from '../support/integrity/oracle.ts';
import { lastPullChange, latestManifest, outcomesOf, pushingClient } from '../support/integrity/row-digest.ts';
import { arm } from '../support/integrity/tampering.ts';
import type { Json } from '../support/wire-client.ts';
import type { SyncWorld } from '../support/world.ts';

processPhrase(/^querying the table list on client "([^"]+)"/);

Then(/^client "([^"]+)" reports no installed schema$/, async function (this: SyncWorld, name: string) {
  const client = await this.process(name);
  const result = await client.call<{ schema: unknown }>('inspectScopes');
  this.assert.equal(result.schema ?? null, null, `client "${name}" reports an installed schema`);
});

Then(/^querying the table list on client "([^"]+)" shows no synced table "([^"]+)"$/, async function (this: SyncWorld, name: string, table: string) {
  const client = await this.process(name);
  const { rows } = await client.call<{ rows: Obj[] }>('query', { sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND lower(name) = lower(?)", params: [table] });
  this.assert.equal(rows, [], `client "${name}" created table ${table}`);
});

Then(/^client "([^"]+)" sent no pull or rebuild request$/, async function (this: SyncWorld, name: string) {
  const pulls = await clientExchanges(this, name, 'pull');
  const rebuilds = await clientExchanges(this, name, 'rebuild');
  const connects = await clientExchanges(this, name, 'connect');
  this.assert.ok(connects.length > 0, `client "${name}" connected at all`);
  this.assert.equal(pulls.length + rebuilds.length, 0, `pull and rebuild requests of client "${name}"`);
});

Then(
  /^the pull response change for row "([^"]+)" of table "([^"]+)" has field "([^"]+)" equal to the JSON value (.+)$/,
  async function (this: SyncWorld, key: string, tableName: string, column: string, expected: string) {
    const [name] = [...this.clientUsers.keys()];
    const change = await lastPullChange(this, name ?? 'A', key, tableName);
    integrity(this).lastMessage = change;
    const manifest = (await manifests(this)).get(change.schemaHash) ?? (await latestManifest(this));
    const fieldId = fieldIdOf(tableById(manifest, change.table), column);
    const row = change.row as Obj | undefined;
    this.assert.ok(row !== undefined && Object.hasOwn(row, fieldId), `the change for row "${key}" carries no field "${column}" (${fieldId})`);
    this.assert.equal(wireText(row[fieldId]), wireText(parseJson(expected)), `field "${column}" of row "${key}" on the wire`);
  },
);

Then('the row checksum of that outcome equals the digest the harness codec computes from its outcome_schema, table, pk, server_row and server_version', async function (this: SyncWorld) {
  const outcomes = await outcomesOf(this, await pushingClient(this));
  const last = outcomes[outcomes.length - 1];
  if (last === undefined) throw new Error('no push outcome was recorded');
  this.assert.ok(last.row !== undefined, `outcome ${String(last.raw.mutation_id)} carries no server_row`);
  const verdict = verifyRowMessage(await manifests(this), last);
  this.assert.ok(verdict.ok, `outcome ${String(last.raw.mutation_id)}: ${verdict.problem ?? ''}`);
});

Given(
  /^the proxy will set the "type" of field "([^"]+)" to "([^"]+)" in the "schema_definition" of the next connect response to client "([^"]+)", recomputing the manifest hash in "schema_definition" and "schema"$/,
  async function (this: SyncWorld, column: string, alias: string, name: string) {
    await arm(this, name, 'connect', `type of ${column} set to ${alias}`, (json) => {
      const manifest = json.schema_definition as (Manifest & Obj) | undefined;
      if (manifest === undefined) return undefined;
      const field = manifest.tables.flatMap((t) => t.fields).find((f) => f.name === column);
      if (field === undefined) throw new Error(`the manifest has no field named ${column}`);
      field.type = alias;
      // The forged manifest breaks the portable type set on purpose, so its hash comes from the formula without the manifest checks.
      const { hash } = schemaManifestHashUnchecked(manifest);
      manifest.schema_hash = hash;
      (json.schema as Obj).hash = hash;
      return json;
    });
  },
);

const PORTABLE = ['string', 'int', 'int64', 'decimal', 'float', 'boolean', 'datetime', 'date', 'time', 'json', 'bytes'];

function tableOf(world: SyncWorld, name: string, table: string): ManifestTable {
  const manifest = world.wire(name).manifest;
  if (manifest === undefined) throw new Error(`client "${name}" has no manifest (connect first)`);
  return tableByName(manifest as unknown as Manifest, table);
}

/** Posts a push body with exact spellings kept; the request is wrong on purpose. */
async function sendPush(world: SyncWorld, name: string, body: Json, raw?: string): Promise<void> {
  await world.wire(name).post('/sync/push', undefined, { raw: raw ?? serializeJson(body), invalid: true, endpoint: 'push' });
}

When(
  /^client "([^"]+)" pushes mutation "([^"]+)" inserting row "([^"]+)" of table "([^"]+)" with columns "([^"]+)" = "([^"]*)" and "([^"]+)" = the JSON value (.+)$/,
  async function (this: SyncWorld, name: string, mutationId: string, key: string, table: string, column: string, text: string, typed: string, value: string) {
    const wire = this.wire(name);
    const shape = tableOf(this, name, table);
    const mutation = wire.mutation({ op: 'insert', table, pk: key, mutation_id: mutationId, columns: { [column]: text } });
    (mutation.columns as Obj)[fieldIdOf(shape, typed)] = jsonLiteral(value);
    await sendPush(this, name, wire.pushBody([mutation]));
  },
);

When(/^client "([^"]+)" sends its next push request inserting row "([^"]+)" with (.+)$/, async function (this: SyncWorld, name: string, key: string, malformation: string) {
  const wire = this.wire(name);
  const table = [...this.model.tables.keys()][0] as string;
  const shape = tableOf(this, name, table);
  const owner = shape.fields.find((f) => f.name === 'owner' || f.name === 'owner_id');
  const mutation = wire.mutation({ op: 'insert', table, pk: key, columns: owner === undefined ? {} : { [owner.name]: wire.userId } });
  const body = wire.pushBody([mutation]);
  const columns = mutation.columns as Obj;
  const byName = (given: Obj) => Object.fromEntries(Object.entries(given).map(([column, v]) => [fieldIdOf(shape, column), v]));
  let m = /^"\/mutations\/0\/pk" set to (\{.*\})$/.exec(malformation);
  if (m) {
    mutation.pk = byName(JSON.parse(m[1] as string) as Obj);
    return sendPush(this, name, body);
  }
  m = /^"\/mutations\/0\/columns\/([^"]+)" set to (.+)$/.exec(malformation);
  if (m) {
    const column = m[1] as string;
    const known = shape.fields.some((f) => f.name === column);
    columns[known ? fieldIdOf(shape, column) : column] = jsonLiteral(m[2] as string);
    return sendPush(this, name, body);
  }
  m = /^the member "([^"]+)" written twice inside "\/mutations\/0\/columns"$/.exec(malformation);
  if (m) {
    const id = fieldIdOf(shape, m[1] as string);
    const members = Object.entries(columns).map(([k, v]) => `${JSON.stringify(k)}:${serializeJson(v)}`);
    members.push(`${JSON.stringify(id)}:"first"`, `${JSON.stringify(id)}:"second"`);
    mutation.columns = new RawJson(`{${members.join(',')}}`);
    return sendPush(this, name, body);
  }
  throw new Error(`unknown malformation "${malformation}"`);
});

function lastPushReply(world: SyncWorld) {
  const reply = [...world.replies].reverse().find((r) => r.endpoint === 'push');
  if (reply === undefined) throw new Error('no push was answered in this scenario');
  return reply;
}

Then(/^the response is status (\d+) with error code "([^"]+)"$/, function (this: SyncWorld, status: string, code: string) {
  const reply = lastPushReply(this);
  this.assert.equal({ status: reply.status, code: reply.json?.error?.code }, { status: Number(status), code }, `answer to the malformed push: ${reply.text}`);
});

Then(/^the response is a 200 whose outcome is "([^"]+)" with code "([^"]+)"(?: or "([^"]+)")?$/, function (this: SyncWorld, status: string, code: string, other: string | null) {
  const reply = lastPushReply(this);
  this.assert.equal(reply.status, 200, `answer to the push: ${reply.text}`);
  const outcomes = [...(reply.json.accepted ?? []), ...(reply.json.rejected ?? [])] as Obj[];
  this.assert.equal(outcomes.length, 1, `one outcome: ${reply.text}`);
  const outcome = outcomes[0] as Obj;
  this.assert.equal(outcome.status, status, `outcome status: ${reply.text}`);
  this.assert.ok(outcome.code === code || (other != null && outcome.code === other), `outcome code ${String(outcome.code)} is ${code}${other ? ` or ${other}` : ''}`);
});

/** Manifests the server sent in this scenario: GET /sync/schema and connect answers. */
async function publishedManifests(world: SyncWorld): Promise<Manifest[]> {
  const out: Manifest[] = [];
  for (const e of await exchanges(world)) {
    const body = e.endpoint === 'schema' || e.endpoint === 'connect' ? serverBody(e) : undefined;
    const manifest = (e.endpoint === 'schema' ? body?.manifest : body?.schema_definition) as Manifest | undefined;
    if (manifest !== undefined) out.push(JSON.parse(JSON.stringify(manifest, (_k, v) => (v instanceof Object && 'raw' in v ? Number(v.raw) : v))) as Manifest);
  }
  return out;
}

Then(/^every "type" in both manifests is one of (.+)$/, async function (this: SyncWorld, list: string) {
  const allowed = [...list.matchAll(/"([^"]+)"/g)].map((m) => m[1]);
  this.assert.equal([...allowed].sort(), [...PORTABLE].sort(), 'the feature names exactly the eleven portable types');
  const found = await publishedManifests(this);
  this.assert.ok(found.length >= 2, `both manifests were received (${found.length})`);
  for (const manifest of found) {
    for (const table of manifest.tables) {
      for (const field of table.fields) this.assert.ok(PORTABLE.includes(field.type), `field ${table.name}.${field.name} has type "${field.type}", not a portable name`);
    }
  }
});

Then(/^field "([^"]+)" has type "([^"]+)" with precision (\d+) and scale (\d+)$/, async function (this: SyncWorld, column: string, type: string, precision: string, scale: string) {
  const found = await publishedManifests(this);
  this.assert.ok(found.length > 0, 'a manifest was received');
  for (const manifest of found) {
    const field = manifest.tables.flatMap((t) => t.fields).find((f) => f.name === column);
    this.assert.equal({ type: field?.type, precision: field?.precision, scale: field?.scale }, { type, precision: Number(precision), scale: Number(scale) }, `field ${column}`);
  }
});

Then(/^no field other than "([^"]+)" carries "precision" or "scale"$/, async function (this: SyncWorld, column: string) {
  const found = await publishedManifests(this);
  this.assert.ok(found.length > 0, 'a manifest was received');
  for (const manifest of found) {
    for (const field of manifest.tables.flatMap((t) => t.fields)) {
      if (field.name === column) continue;
      this.assert.ok(!('precision' in field) && !('scale' in field), `field ${field.name} carries precision or scale`);
    }
  }
});

// --- generated rows -------------------------------------------------------

const pad = (n: number | bigint, width: number) => String(n).padStart(width, '0');

const noNul = (s: string) => !s.includes('\u0000') && isWellFormedText(s);

const text = fc.oneof(fc.string({ unit: 'grapheme', maxLength: 12 }), fc.string({ unit: 'binary', maxLength: 8 }), fc.constantFrom('', 'e\u0301', '\u00e9', '日本', '🙂')).filter(noNul);

/** A decimal of the declared precision and scale, in canonical text. */
function decimalArb(precision: number, scale: number) {
  const limit = 10n ** BigInt(precision) - 1n;
  return fc.oneof(fc.bigInt({ min: -limit, max: limit }), fc.constantFrom(0n, limit, -limit, 1n, -1n)).map((units) => {
    const negative = units < 0n;
    const digits = pad(negative ? -units : units, scale + 1);
    const whole = digits.slice(0, digits.length - scale);
    const fraction = digits.slice(digits.length - scale).replace(/0+$/, '');
    const body = fraction === '' ? whole : `${whole}.${fraction}`;
    return body === '0' ? '0' : `${negative ? '-' : ''}${body}`;
  });
}

const jsonArb: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.constant(null),
    fc.boolean(),
    fc.integer({ min: -1_000_000, max: 1_000_000 }),
    fc.double({ min: -1e6, max: 1e6, noNaN: true, noDefaultInfinity: true }),
    text,
    fc.array(tie('value'), { maxLength: 3 }),
    fc.dictionary(text, tie('value'), { maxKeys: 3 }),
  ),
})).value;

const datetime = fc.integer({ min: Date.UTC(1970, 0, 1), max: Date.UTC(2099, 11, 31) }).chain((ms) => fc.integer({ min: 0, max: 999 }).map((micro) => `${new Date(ms).toISOString().slice(0, 23)}${pad(micro, 3)}Z`));

const date = fc.integer({ min: Date.UTC(1970, 0, 1), max: Date.UTC(2099, 11, 31) }).map((ms) => new Date(ms).toISOString().slice(0, 10));

const time = fc.tuple(fc.integer({ min: 0, max: 23 }), fc.integer({ min: 0, max: 59 }), fc.integer({ min: 0, max: 59 }), fc.integer({ min: 0, max: 999_999 })).map(([h, m, s, us]) => `${pad(h, 2)}:${pad(m, 2)}:${pad(s, 2)}.${pad(us, 6)}`);

/** A value for one manifest field, null included when the field allows it. */
function valueArb(field: ManifestTable['fields'][number]): fc.Arbitrary<unknown> {
  let arb: fc.Arbitrary<unknown>;
  switch (field.type) {
    case 'int':
      arb = fc.oneof(fc.integer(), fc.constantFrom(-2147483648, 2147483647, 0));
      break;
    case 'int64':
      arb = fc.oneof(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), fc.constantFrom(-(2n ** 63n), 2n ** 63n - 1n, 2n ** 53n + 1n)).map(String);
      break;
    case 'decimal':
      arb = decimalArb(field.precision ?? 10, field.scale ?? 0);
      break;
    case 'float':
      arb = fc.oneof(fc.double({ noNaN: true, noDefaultInfinity: true }), fc.constantFrom(0.1, 5e-324, 1.7976931348623157e308, -0, 1e21));
      break;
    case 'boolean':
      arb = fc.boolean();
      break;
    case 'datetime':
      arb = datetime;
      break;
    case 'date':
      arb = date;
      break;
    case 'time':
      arb = time;
      break;
    case 'json':
      arb = jsonArb.map((v) => canonicalJson(v)).filter((t) => {
        try {
          validateCanonicalJsonText(t);
          return true;
        } catch {
          return false;
        }
      });
      break;
    case 'bytes':
      arb = fc.uint8Array({ maxLength: 24 }).map((b) => Buffer.from(b).toString('base64url'));
      break;
    default:
      arb = text;
  }
  return field.nullable ? fc.option(arb, { nil: null, freq: 4 }) : arb;
}

When(
  /^the harness pushes (\d+) generated rows to table "([^"]+)", each field drawn from its portable type with nulls, range boundaries, decimals at the declared precision and scale, binary64 edge values, nested JSON and non-ASCII text$/,
  async function (this: SyncWorld, count: string, tableName: string) {
    const [name] = [...this.clientUsers.keys()];
    const wire = this.wire(name as string);
    const shape = tableOf(this, name as string, tableName);
    const all = await manifests(this);
    const perBatch = 10;
    const fields = shape.fields.filter((f) => f.field_id !== shape.primary_key_field_id && f.name !== 'owner' && f.name !== 'owner_id');
    const owner = shape.fields.find((f) => f.name === 'owner' || f.name === 'owner_id');
    const rowArb = fc.record(Object.fromEntries(fields.map((f) => [f.name, valueArb(f)])));
    let pushed = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(rowArb, { minLength: perBatch, maxLength: perBatch }), async (rows) => {
        const mutations = rows.map((columns) => wire.mutation({ op: 'insert', table: tableName, pk: `g-${randomUUID()}`, columns: { ...columns, ...(owner ? { [owner.name]: wire.userId } : {}) } }));
        const reply = await wire.push(mutations);
        if (reply.status !== 200) throw new Error(`push answered ${reply.status}: ${reply.text}`);
        const body = parseJson(reply.text) as unknown as Obj;
        const outcomes = [...((body.accepted as Obj[]) ?? []), ...((body.rejected as Obj[]) ?? [])];
        for (const o of outcomes) {
          if (o.status !== 'applied') throw new Error(`a generated row was not applied: ${serializeJson(o as JsonValue)}`);
          const verdict = verifyRowMessage(all, { kind: 'outcome', schemaHash: String((o.outcome_schema as Obj).hash), table: String(o.table), pk: o.pk, row: o.server_row, serverVersion: o.server_version, checksum: o.row_checksum, raw: o });
          if (!verdict.ok) throw new Error(`outcome ${String(o.mutation_id)}: ${verdict.problem}`);
        }
        pushed += rows.length;
      }),
      { numRuns: Math.ceil(Number(count) / perBatch), endOnFailure: true },
    );
    this.assert.ok(pushed >= Number(count), `${pushed} generated rows were pushed and verified`);
  },
);

Then('every push outcome row checksum and every rebuild record row checksum equals the harness codec digest', async function (this: SyncWorld) {
  const all = await manifests(this);
  const messages = rowMessages(await exchanges(this)).filter((m) => m.kind !== 'change');
  this.assert.ok(messages.some((m) => m.kind === 'outcome') && messages.some((m) => m.kind === 'record'), 'push outcomes and rebuild records were recorded');
  for (const m of messages) {
    const verdict = verifyRowMessage(all, m);
    this.assert.ok(verdict.ok, `${m.kind} ${JSON.stringify(m.pk)}: ${verdict.problem ?? ''}`);
  }
});

Then('the final rebuild checksum equals the scope digest the harness codec computes over the rebuilt records', async function (this: SyncWorld) {
  const all = await manifests(this);
  const rebuilds = (await exchanges(this)).filter((e) => e.endpoint === 'rebuild');
  const last = rebuilds[rebuilds.length - 1];
  const final = last === undefined ? undefined : serverBody(last);
  this.assert.ok(final?.has_more === false, 'the last rebuild page is final');
  const request = JSON.parse(last?.requestBody.toString('utf8') ?? '{}') as Obj;
  const pages = rebuilds.filter((e) => (JSON.parse(e.requestBody.toString('utf8')) as Obj).rebuild_id === request.rebuild_id);
  const records = pages.flatMap((e) => ((serverBody(e)?.records as Obj[]) ?? []).map((r) => ({ table: String(r.table), row: r.row, serverVersion: String(r.server_version) })));
  const manifest = all.get(String((request.schema as Obj).hash)) as Manifest;
  integrity(this).claims.set('rebuilt', String(records.length));
  this.assert.equal(String((final?.checksum as Obj | undefined)?.digest), scopeDigestHex(manifest, String(request.scope), records), `final rebuild checksum of ${String(request.scope)} over ${records.length} records`);
});

Then(
  /^the server refuses mutation "([^"]+)" before applying it, with a 400 "([^"]+)" for the whole request or the outcome "([^"]+)" with code "([^"]+)"$/,
  function (this: SyncWorld, mutationId: string, requestCode: string, status: string, code: string) {
    const reply = lastPushReply(this);
    if (reply.status === 400) {
      this.assert.equal(reply.json?.error?.code, requestCode, `the whole push was refused: ${reply.text}`);
      return;
    }
    this.assert.equal(reply.status, 200, `the push was answered 400 or 200: ${reply.text}`);
    const outcome = [...(reply.json.accepted ?? []), ...(reply.json.rejected ?? [])].find((o: Obj) => o.mutation_id === mutationId) as Obj | undefined;
    this.assert.equal({ status: outcome?.status, code: outcome?.code }, { status, code }, `outcome of ${mutationId}: ${reply.text}`);
  },
);
