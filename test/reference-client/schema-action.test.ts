import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ClientError } from '../../reference/client/errors.ts';
import { checkSchemaAction } from '../../reference/client/sync/schema-action.ts';

const answer = (body: unknown, status = 200) => ({ status, retryAfter: undefined, body: new TextEncoder().encode(JSON.stringify(body)) });
const manifest = { schema_version: 2 };
const schema = (action: string) => ({ version: 2, hash: 'a'.repeat(64), action });

const refusal = (e: unknown) => e instanceof ClientError && e.operation === 'schema' && e.code === 'invalid_schema_action' && e.retryable === false;

test('answers that keep to the action table pass', () => {
  checkSchemaAction(answer({ schema: schema('none') }));
  checkSchemaAction(answer({ schema: schema('replace'), schema_definition: manifest }));
  checkSchemaAction(answer({ schema: schema('rebuild_local'), schema_definition: manifest, affected_scopes: ['team:t_1'] }));
  checkSchemaAction(answer({ schema: { ...schema('unsupported'), reason: 'unknown_schema_lineage' } }));
});

test('rebuild_local with an empty or absent affected scope list is a schema failure', () => {
  assert.throws(() => checkSchemaAction(answer({ schema: schema('rebuild_local'), schema_definition: manifest, affected_scopes: [] })), refusal);
  assert.throws(() => checkSchemaAction(answer({ schema: schema('rebuild_local'), schema_definition: manifest })), refusal);
});

test('a member the action forbids, or a missing manifest, is a schema failure', () => {
  assert.throws(() => checkSchemaAction(answer({ schema: schema('none'), schema_definition: manifest })), refusal);
  assert.throws(() => checkSchemaAction(answer({ schema: schema('replace'), schema_definition: manifest, affected_scopes: ['a'] })), refusal);
  assert.throws(() => checkSchemaAction(answer({ schema: schema('replace') })), refusal);
  assert.throws(() => checkSchemaAction(answer({ schema: { ...schema('unsupported'), reason: 'x' }, affected_scopes: ['a'] })), refusal);
});

test('error answers, bodies that are not JSON and unknown actions are left to the response reader', () => {
  checkSchemaAction(answer({ error: { code: 'upgrade_required' } }, 426));
  checkSchemaAction({ status: 200, retryAfter: undefined, body: new TextEncoder().encode('not json') });
  checkSchemaAction(answer({ schema: schema('fetch'), affected_scopes: [] }));
});
