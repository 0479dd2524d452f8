/**
 * Steps of SYNC-SCHEMA-003 Schema Cursor Continuity: the harness client
 * synced under one manifest, a manifest published after, the replacement
 * map of its next connect and the pulls that present replaced or old tokens.
 */
import { Given, Then, When } from '@cucumber/cucumber';
import { processPhrase } from '../support/client-mode.ts';
import { lastConnect, pullPresenting, quotedNames, recordedCursor, replacements } from '../support/cursor-continuity/bridge.ts';
import { afterLastConnect, lastWindow, reportedState } from '../support/cursor-continuity/client-migration.ts';
import { bodyOf, deliveredOf, exchangesOf } from '../support/exchanges.ts';
import { ident, literal, publishChange, sqlValue } from '../support/schema-and-versions/manifests.ts';
import { lastIssued, recordCursors, recordedCursors } from '../support/scope-cursors/cursors.ts';
import { quietReader } from '../support/server-rows.ts';
import { awaitCapture } from '../support/source-schema.ts';
import type { Obj } from '../support/wire-values/recorded.ts';
import { fillerInsert } from '../support/wire-values/requests.ts';
import type { SyncWorld } from '../support/world.ts';

/** Single cursors a step recorded by label ("old_t1"). */
const recordedSingles = new WeakMap<SyncWorld, Record<string, string>>();

Given(/^the harness client "([^"]+)" of user "([^"]+)" has completed a sync while manifest version (\d+) was current$/, async function (this: SyncWorld, name: string, user: string, version: string) {
  await this.readyServer();
  const client = this.wire(name, user);
  await client.connectAndRebuild();
  const last = (await client.pullAll()).at(-1);
  if (last?.status !== 200) throw new Error(`client "${name}" could not pull to the end: ${last?.status} ${last?.text.slice(0, 300)}`);
  if (client.schema.version !== Number(version)) throw new Error(`client "${name}" synced under manifest version ${client.schema.version}, not ${version}`);
});

Given(/^the harness has recorded the cursors of "([^"]+)" as "([^"]+)" for scopes (.+)$/, async function (this: SyncWorld, name: string, label: string, list: string) {
  await recordCursors(this, name, label);
  const recorded = recordedCursors(this, label);
  for (const scope of quotedNames(list)) if (typeof recorded.get(scope) !== 'string') throw new Error(`client "${name}" holds no cursor for ${scope}`);
});

// Written by an ordinary client of the owner, after the recorded cursors: a resumed cursor must yield exactly these.
Given(/^the server table "([^"]+)" gains rows "([^"]+)" and "([^"]+)" owned by "([^"]+)" after those cursors were issued$/, async function (this: SyncWorld, table: string, first: string, second: string, owner: string) {
  const writer = quietReader(this, owner);
  const connected = await writer.connect();
  if (connected.status !== 200) throw new Error(`a writer of ${owner} could not connect: ${connected.status} ${connected.text.slice(0, 300)}`);
  if ([...this.model.tables.keys()][0] !== table) throw new Error(`rows are written to the scenario's first table, not "${table}"`);
  const reply = await writer.push([fillerInsert(this, writer, first), fillerInsert(this, writer, second)]);
  if (reply.status !== 200 || (reply.json?.accepted ?? []).length !== 2) throw new Error(`the writer's push was answered ${reply.status}: ${reply.text.slice(0, 300)}`);
  await awaitCapture(this);
});

When(/^the harness client "([^"]+)" connects presenting its installed schema and (?:its cursors|the "([^"]+)" cursors)$/, async function (this: SyncWorld, name: string, label: string | undefined | null) {
  const client = this.wire(name);
  const presented = label === undefined || label === null ? client.cursors : recordedCursors(this, label);
  const known = Object.fromEntries([...presented].map(([scope, cursor]) => [scope, { cursor }]));
  await client.connect({ '/known_scopes': known });
});

Then(/^member "scope_cursor_updates" has a nonempty string for each of (.+)$/, function (this: SyncWorld, list: string) {
  const map = replacements(this);
  for (const scope of quotedNames(list)) this.assert.ok(typeof map[scope] === 'string' && (map[scope] as string).length > 0, `the replacement for ${scope}: ${JSON.stringify(map[scope])}`);
});

Then('each replacement differs from the {string} cursor of its scope', function (this: SyncWorld, label: string) {
  const map = replacements(this);
  const same = Object.entries(map).filter(([scope, cursor]) => typeof cursor === 'string' && cursor === recordedCursors(this, label).get(scope));
  this.assert.ok(Object.values(map).some((c) => typeof c === 'string'), 'the connect replaced at least one cursor');
  this.assert.equal(same.map(([scope]) => scope), [], `scopes whose replacement is the "${label}" cursor itself`);
});

When(/^the harness client "([^"]+)" pulls presenting schema version (\d+) and the replacement cursors$/, async function (this: SyncWorld, name: string, version: string) {
  const map = replacements(this);
  await pullPresenting(this, name, Number(version), (scope) => (typeof map[scope] === 'string' ? (map[scope] as string) : undefined));
});

Then(/^the changes are exactly the upserts of "([^"]+)" and "([^"]+)" in scope "([^"]+)"$/, function (this: SyncWorld, first: string, second: string, scope: string) {
  const reply = this.lastReply();
  this.assert.equal(reply.status, 200, `the pull was answered ${reply.status}: ${reply.text.slice(0, 300)}`);
  const changes = ((reply.json?.changes ?? []) as Obj[]).map((c) => ({ op: c.op, scope: c.scope, key: Object.values((c.pk ?? {}) as Obj)[0] }));
  const sorted = (list: typeof changes) => [...list].sort((a, b) => String(a.key).localeCompare(String(b.key)));
  this.assert.equal(sorted(changes), sorted([first, second].map((key) => ({ op: 'upsert', scope, key }))), `the changes of the pull: ${reply.text.slice(0, 400)}`);
});

// The historical values land only in rows placed in the scope, so only that scope is affected.
When(
  /^the operator publishes a "class_3" manifest that adds column "([^"]+)" of type "([^"]+)" with historical values to table "([^"]+)", affecting scope "([^"]+)"$/,
  async function (this: SyncWorld, column: string, type: string, tableName: string, scope: string) {
    const table = this.model.table(tableName);
    const template = table.placements[0];
    const placed = template === undefined ? undefined : new RegExp(`^${template.replace(/\{([^}]+)\}/, '(?<value>.+)')}$`).exec(scope);
    const placedColumn = template?.match(/\{([^}]+)\}/)?.[1];
    if (!placed?.groups?.value || placedColumn === undefined) throw new Error(`no placement of table "${tableName}" puts a row in scope "${scope}"`);
    const where = `${ident(placedColumn)}::text = ${literal(placed.groups.value)}`;
    const server = await this.readyServer();
    if (!server.sourceSql) throw new Error(`server adapter "${server.id}" has no sourceSql capability to seed table ${tableName}`);
    const values = table.columns.map((c, i) => (c.key ? literal(`${tableName}-${column}-seed`) : c.name === placedColumn ? literal(placed.groups?.value ?? '') : sqlValue(c.type, i)));
    await server.sourceSql.query(`INSERT INTO public.${ident(tableName)} (${table.columns.map((c) => ident(c.name)).join(', ')}) VALUES (${values.join(', ')})`);
    await publishChange(this, tableName, `ALTER TABLE public.${ident(tableName)} ADD COLUMN ${ident(column)} ${type === 'int' ? 'integer' : 'text'};\nUPDATE public.${ident(tableName)} SET ${ident(column)} = ${sqlValue(type, 7)} WHERE ${where};`, 'class_3');
    table.columns.push({ name: column, type, key: false, nullable: true });
  },
);

Then(/^member "scope_cursor_updates" has null for "([^"]+)" and a nonempty string for "([^"]+)" and for "([^"]+)"$/, function (this: SyncWorld, nulled: string, first: string, second: string) {
  const kept = [first, second];
  const map = replacements(this);
  this.assert.ok(Object.hasOwn(map, nulled) && map[nulled] === null, `the entry for ${nulled}: ${JSON.stringify(map)}`);
  for (const scope of kept.filter((s): s is string => typeof s === 'string')) this.assert.ok(typeof map[scope] === 'string' && (map[scope] as string).length > 0, `the replacement for ${scope}: ${JSON.stringify(map)}`);
});

Then(/^member "scope_cursor_updates" has a nonempty string for "([^"]+)"$/, function (this: SyncWorld, scope: string) {
  const map = replacements(this);
  this.assert.ok(typeof map[scope] === 'string' && (map[scope] as string).length > 0, `the replacement for ${scope}: ${JSON.stringify(map)}`);
});

Then('member "scope_cursor_updates" has no nonempty string value', function (this: SyncWorld) {
  const reply = lastConnect(this);
  const map = (reply.json?.scope_cursor_updates ?? {}) as Obj;
  this.assert.equal(Object.entries(map).filter(([, c]) => typeof c === 'string' && c.length > 0).map(([s]) => s), [], `scopes given a replacement: ${reply.text.slice(0, 400)}`);
});

When(/^the harness client "([^"]+)" pulls presenting schema version (\d+), the replacement cursor for "([^"]+)" and the "([^"]+)" cursor for "([^"]+)"$/, async function (this: SyncWorld, name: string, version: string, replaced: string, label: string, old: string) {
  const map = replacements(this);
  const replacement = map[replaced];
  if (typeof replacement !== 'string') throw new Error(`the connect gave no replacement for ${replaced}: ${JSON.stringify(map)}`);
  const oldCursor = recordedCursor(this, label, old);
  await pullPresenting(this, name, Number(version), (scope) => (scope === replaced ? replacement : scope === old ? oldCursor : undefined));
});

Then('scope {string} is served normally', function (this: SyncWorld, scope: string) {
  const reply = this.lastReply();
  this.assert.equal(reply.status, 200, `the pull was answered ${reply.status}: ${reply.text.slice(0, 300)}`);
  this.assert.ok(!((reply.json?.rebuild ?? []) as string[]).includes(scope), `${scope} was sent to rebuild: ${reply.text.slice(0, 300)}`);
  this.assert.ok(typeof reply.json?.scope_cursors?.[scope] === 'string', `the pull issued a cursor for ${scope}: ${reply.text.slice(0, 300)}`);
});

When(/^the harness client "([^"]+)" pulls presenting schema version (\d+) and the "([^"]+)" cursor for "([^"]+)"$/, async function (this: SyncWorld, name: string, version: string, label: string, old: string) {
  const oldCursor = recordedCursor(this, label, old);
  await pullPresenting(this, name, Number(version), (scope) => (scope === old ? oldCursor : undefined));
});

Then('the response has no change for scope {string}', function (this: SyncWorld, scope: string) {
  const reply = this.lastReply();
  this.assert.equal(reply.status, 200, `the pull was answered ${reply.status}: ${reply.text.slice(0, 300)}`);
  this.assert.equal(((reply.json?.changes ?? []) as Obj[]).filter((c) => c.scope === scope).length, 0, `changes of ${scope} in ${reply.text.slice(0, 300)}`);
});

// The rows come from an ordinary writer of the client's user; two pulls move the client's acknowledged position past them, so compaction may raise the floor above the recorded cursor.
Given(
  /^the server table "([^"]+)" gains (\d+) rows in team "([^"]+)", "([^"]+)" pulls and then acknowledges the newer cursor, and the operator compacts scope "([^"]+)"$/,
  async function (this: SyncWorld, table: string, count: string, team: string, name: string, _scope: string) {
    const client = this.wire(name);
    const writer = quietReader(this, client.userId);
    const connected = await writer.connect();
    if (connected.status !== 200) throw new Error(`a writer of ${client.userId} could not connect: ${connected.status} ${connected.text.slice(0, 300)}`);
    const key = this.model.keyColumn(table).name;
    const rows = Array.from({ length: Number(count) }, (_, i) => {
      const pk = `${table}-${team}-${i + 1}`;
      const authored = this.model.table(table).columns.filter((c) => writer.tableSchema(table).fields.find((f) => f.name === c.name)?.writable !== false);
      const columns = Object.fromEntries(authored.map((c) => [c.name, c.name === key ? pk : c.name === 'team_id' ? team : `value ${i + 1}`]));
      return writer.mutation({ op: 'insert', table, pk, columns });
    });
    const pushed = await writer.push(rows);
    if (pushed.status !== 200 || (pushed.json?.accepted ?? []).length !== rows.length) throw new Error(`the writer's push was answered ${pushed.status}: ${pushed.text.slice(0, 300)}`);
    await awaitCapture(this);
    for (const step of ['pull', 'acknowledge']) {
      const reply = await client.pull();
      if (reply.status !== 200) throw new Error(`the ${step} of client "${name}" was answered ${reply.status}: ${reply.text.slice(0, 300)}`);
    }
    const server = await this.readyServer();
    if (!server.compaction) throw new Error(`server adapter "${server.id}" offers no compaction control`);
    await server.compaction.compact();
  },
);

// A scope's membership generation changes only when its contents do: the scope needs a row for the rule change to move.
Given(/^the server table "([^"]+)" gains a row in team "([^"]+)"$/, async function (this: SyncWorld, table: string, team: string) {
  const server = await this.readyServer();
  if (!server.sourceSql) throw new Error(`server adapter "${server.id}" has no sourceSql capability to write table ${table}`);
  const spec = this.model.table(table);
  const values = spec.columns.map((c, i) => (c.key ? literal(`${table}-${team}-seed`) : c.name === 'team_id' ? literal(team) : sqlValue(c.type, i)));
  await server.sourceSql.query(`INSERT INTO public.${ident(table)} (${spec.columns.map((c) => ident(c.name)).join(', ')}) VALUES (${values.join(', ')})`);
  await awaitCapture(this);
});

processPhrase(/^client "([^"]+)" of user "[^"]+" has completed a sync while manifest version/);
processPhrase(/^client "([^"]+)" inspection shows /);
processPhrase(/^the harness has recorded the cursor client "([^"]+)" holds for /);

Given(/^client "([^"]+)" of user "([^"]+)" has completed a sync while manifest version (\d+) was current$/, async function (this: SyncWorld, name: string, user: string, version: string) {
  this.clientUsers.set(name, user);
  await this.inSyncWindow(name, 'has synced', async () => {
    const result = await this.syncProcess(name);
    if ('error' in result) throw new Error(`client "${name}" could not sync: ${result.error.message}`);
    if (result.completion !== 'idle') throw new Error(`client "${name}" ended its sync "${result.completion}" in state ${result.status}, not idle`);
  });
  const state = await reportedState(this, name);
  if (state.schema?.version !== Number(version)) throw new Error(`client "${name}" installed manifest version ${state.schema?.version}, not ${version}`);
});

Then('the proxy recorded no rebuild request from client {string}', async function (this: SyncWorld, name: string) {
  const { from, to } = lastWindow(this, name);
  const all = await exchangesOf(this, name, { from, to });
  this.assert.ok(all.some((e) => e.endpoint === 'connect'), `the last sync of client "${name}" connected`);
  this.assert.equal(all.filter((e) => e.endpoint === 'rebuild').map((e) => bodyOf(e.requestBody)?.scope), [], `scopes client "${name}" rebuilt in its last sync`);
});

Then('the first pull of client {string} after the connect presents, for every scope, exactly the string the connect returned in "scope_cursor_updates"', async function (this: SyncWorld, name: string) {
  const { connect, later } = await afterLastConnect(this, name);
  const map = (connect.scope_cursor_updates ?? {}) as Obj;
  const replaced = Object.entries(map).filter(([, c]) => typeof c === 'string');
  this.assert.ok(replaced.length > 0, `the connect replaced at least one cursor: ${JSON.stringify(map)}`);
  const pull = later.find((e) => e.endpoint === 'pull');
  if (pull === undefined) throw new Error(`client "${name}" sent no pull after the connect`);
  const presented = (bodyOf(pull.requestBody)?.scopes ?? {}) as Record<string, { cursor?: unknown }>;
  this.assert.equal(Object.fromEntries(replaced.map(([scope]) => [scope, presented[scope]?.cursor])), Object.fromEntries(replaced), 'the cursors the first pull after the connect presented, against the replacements');
});

Then('client {string} inspection shows manifest version {int} and the replacement cursors', async function (this: SyncWorld, name: string, version: number) {
  const state = await reportedState(this, name);
  this.assert.equal(state.schema?.version, version, `the manifest version client "${name}" reports`);
  // After the pull that followed, each scope holds the last cursor the server issued: a replacement unless a later answer issued another.
  this.assert.equal(Object.fromEntries(state.cursors), Object.fromEntries(await lastIssued(this, name)), `cursors client "${name}" reports against the last ones issued to it`);
});

Given('the harness has recorded the cursor client {string} holds for {string} as {string}', async function (this: SyncWorld, name: string, scope: string, label: string) {
  const cursor = (await reportedState(this, name)).cursors.get(scope);
  if (typeof cursor !== 'string') throw new Error(`client "${name}" holds no cursor for ${scope}`);
  recordedSingles.set(this, { ...(recordedSingles.get(this) ?? {}), [label]: cursor });
});

Then('no request of client {string} after the connect carries the cursor {string}', async function (this: SyncWorld, name: string, label: string) {
  const cursor = recordedSingles.get(this)?.[label];
  if (cursor === undefined) throw new Error(`no cursor was recorded as "${label}"`);
  const { later } = await afterLastConnect(this, name);
  this.assert.ok(later.length > 0, `client "${name}" sent requests after the connect`);
  this.assert.equal(later.filter((e) => Buffer.from(e.requestBody ?? new Uint8Array()).toString('utf8').includes(cursor)).map((e) => e.endpoint), [], `requests of client "${name}" after the connect carrying the "${label}" cursor`);
});

Then(/^client "([^"]+)" inspection shows manifest version (\d+) with the "([^"]+)" cursors$/, async function (this: SyncWorld, name: string, version: string, label: string) {
  const state = await reportedState(this, name);
  this.assert.equal({ version: state.schema?.version, cursors: Object.fromEntries(state.cursors) }, { version: Number(version), cursors: Object.fromEntries(recordedCursors(this, label)) }, `what client "${name}" reports against manifest ${version} with the "${label}" cursors`);
});

Then(/^client "([^"]+)" inspection shows either manifest version (\d+) with the "([^"]+)" cursors or manifest version (\d+) with the replacement cursors, never a mix$/, async function (this: SyncWorld, name: string, oldVersion: string, label: string, newVersion: string) {
  const state = await reportedState(this, name);
  const old = { version: Number(oldVersion), cursors: Object.fromEntries(recordedCursors(this, label)) };
  const connects = (await exchangesOf(this, name, { endpoints: ['connect'] })).filter((e) => deliveredOf(e)?.status === 200);
  const map = ((bodyOf(deliveredOf(connects.at(-1) as (typeof connects)[number])?.body) as Obj)?.scope_cursor_updates ?? {}) as Record<string, string | null>;
  const replaced = { version: Number(newVersion), cursors: Object.fromEntries([...recordedCursors(this, label)].map(([scope, cursor]) => [scope, Object.hasOwn(map, scope) ? map[scope] : cursor])) };
  const reported = { version: state.schema?.version, cursors: Object.fromEntries(state.cursors) };
  this.assert.ok(Object.keys(map).length > 0, 'the connect before the crash delivered a replacement map');
  this.assert.ok(JSON.stringify(reported) === JSON.stringify(old) || JSON.stringify(reported) === JSON.stringify(replaced), `client "${name}" reports ${JSON.stringify(reported)}; neither ${JSON.stringify(old)} nor ${JSON.stringify(replaced)}`);
});

Then('the proxy recorded no request from client {string} since the restart', async function (this: SyncWorld, name: string) {
  // The restart follows the sync that crashed: whatever the client sent after that sync's window is since the restart.
  const since = lastWindow(this, name).to;
  if (since === undefined) throw new Error(`the last sync of client "${name}" has not ended`);
  const reached = (await exchangesOf(this, name, { from: since, unfinished: true })).filter((e) => e.upstream.length > 0);
  this.assert.equal(reached.map((e) => e.endpoint), [], `requests of client "${name}" that reached the server since the restart`);
});

Given('the proxy rewrites the next connect response for client {string} by changing the "name" of column {string} in "schema_definition" while keeping "schema.hash"', async function (this: SyncWorld, name: string, column: string) {
  const client = await this.process(name);
  const proxy = await this.proxy();
  proxy.inject({
    endpoint: 'connect',
    when: (request) => (request as { client_id?: unknown } | undefined)?.client_id === client.clientId,
    fault: {
      kind: 'rewrite',
      describe: `column ${column} renamed in schema_definition, schema.hash kept`,
      transform: (body) => {
        const field = ((body.schema_definition?.tables ?? []) as { fields: { name: string }[] }[]).flatMap((t) => t.fields).find((f) => f.name === column);
        if (field === undefined) throw new Error(`the connect answer's schema_definition has no column "${column}"`);
        field.name = `${column}_renamed`;
        return body;
      },
    },
  });
});
