import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, beforeEach, test } from 'node:test';
import fc from 'fast-check';
import { WireProxy } from '../../harness/proxy/proxy.ts';
import { getPointer, jsonLiteral, pointerTokens, RawJson, removePointer, serializeJson, setPointer } from '../../harness/proxy/rewrite.ts';
import { type StubServer, startStubServer } from '../adapters/fixtures/stub-server.ts';

const example = (name: string) => readFileSync(new URL(`../wire/examples/${name}.json`, import.meta.url));

let stub: StubServer;
let proxy: WireProxy;

before(async () => {
  stub = await startStubServer();
});
after(() => stub.close());
beforeEach(async () => {
  await proxy?.stop();
  proxy = new WireProxy(stub.url);
  await proxy.start();
});
after(() => proxy.stop());

const pullAs = (clientId: string) => {
  const body = JSON.parse(example('pull-request').toString()) as Record<string, unknown>;
  body.client_id = clientId;
  return fetch(`${proxy.url}/sync/pull`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer t' }, body: JSON.stringify(body) });
};

test('a rewrite changes the next matching answer only, keeps the original and is no protocol problem', async () => {
  proxy.inject({
    endpoint: 'pull',
    when: (request) => (request as { client_id?: string } | undefined)?.client_id === 'mine',
    fault: { kind: 'rewrite', describe: 'scope_set_version 3.0', transform: (json) => setPointer(json, '/scope_set_version', new RawJson('3.0')) },
  });
  const other = await pullAs('theirs');
  assert.deepEqual(Buffer.from(await other.arrayBuffer()), example('pull-response'), 'another client is not matched');
  const first = await (await pullAs('mine')).text();
  assert.match(first, /"scope_set_version":3\.0[,}]/);
  const second = Buffer.from(await (await pullAs('mine')).arrayBuffer());
  assert.deepEqual(second, example('pull-response'), 'only the next answer is rewritten');
  const rewritten = proxy.exchanges[1];
  assert.equal(rewritten?.fault, 'rewrite');
  assert.equal(rewritten?.rewritten?.describe, 'scope_set_version 3.0');
  assert.deepEqual(rewritten?.rewritten?.originalBody, example('pull-response'));
  assert.deepEqual(rewritten?.upstream[0]?.body, example('pull-response'));
  assert.equal(proxy.exchanges[0]?.rewritten, undefined);
  assert.deepEqual(proxy.problems(), []);
});

test('a transform returning undefined leaves the answer alone and stays armed', async () => {
  let calls = 0;
  proxy.inject({
    endpoint: 'pull',
    fault: {
      kind: 'rewrite',
      describe: 'on the second page',
      transform: (json) => {
        calls += 1;
        return calls === 1 ? undefined : setPointer(json, '/has_more', true);
      },
    },
  });
  assert.deepEqual(Buffer.from(await (await pullAs('a')).arrayBuffer()), example('pull-response'));
  const second = (await (await pullAs('a')).json()) as { has_more: boolean };
  assert.equal(second.has_more, true);
  assert.equal(proxy.exchanges[0]?.fault, undefined);
  assert.equal(proxy.exchanges[1]?.fault, 'rewrite');
});

test('a transform that throws delivers the original answer and fails the scenario through problems()', async () => {
  proxy.inject({ endpoint: 'pull', fault: { kind: 'rewrite', describe: 'missing change', transform: (json) => setPointer(json, '/changes/99/op', 'insert') } });
  assert.deepEqual(Buffer.from(await (await pullAs('a')).arrayBuffer()), example('pull-response'));
  assert.match(proxy.problems().join('\n'), /could not apply the rewrite "missing change" to exchange #1/);
});

test('pointers follow RFC 6901, including escaped tokens and array indexes', () => {
  assert.deepEqual(pointerTokens('/a~1b/m~0n/0'), ['a/b', 'm~n', '0']);
  const doc = { 'a/b': { 'm~n': [1, 2] }, scopes: { 'user:alice': 'c' } };
  assert.equal(getPointer(doc, '/a~1b/m~0n/1'), 2);
  assert.equal(getPointer(doc, '/scopes/user:alice'), 'c');
  assert.equal(getPointer(doc, '/missing/deeper'), undefined);
  setPointer(doc, '/scopes/user:alice', null);
  assert.equal(doc.scopes['user:alice'], null);
  removePointer(doc, '/a~1b/m~0n/0');
  assert.deepEqual(doc['a/b']['m~n'], [2]);
  assert.throws(() => setPointer(doc, '/nothing/here', 1), /no object or array/);
  assert.throws(() => removePointer(doc, '/scopes/bob'), /no such member/);
});

test('step literals keep their exact number spelling and strings stay strings', () => {
  assert.equal(serializeJson({ a: jsonLiteral('3.0'), b: jsonLiteral('9007199254740993'), c: jsonLiteral('"x"'), d: jsonLiteral('null'), e: undefined }), '{"a":3.0,"b":9007199254740993,"c":"x","d":null}');
  assert.throws(() => jsonLiteral('bare words'), /not a JSON value/);
});

test('serializeJson agrees with JSON.stringify on plain JSON values', () => {
  fc.assert(
    fc.property(fc.jsonValue(), (value) => {
      assert.equal(serializeJson(value), JSON.stringify(value));
    }),
    { numRuns: 300 },
  );
});
