import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import { after, before, beforeEach, test } from 'node:test';
import { INTENT_HEADER, WireProxy } from '../../harness/proxy/proxy.ts';
import { isResponse } from '../../harness/proxy/records.ts';
import { send } from '../../harness/proxy/send.ts';
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
  stub.hits.length = 0;
  stub.bodies.length = 0;
  stub.arrivals.length = 0;
  proxy = new WireProxy(stub.url);
  await proxy.start();
});
after(() => proxy.stop());

const pull = (headers: Record<string, string> = {}, body: Buffer = example('pull-request')) =>
  fetch(`${proxy.url}/sync/pull`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer t', ...headers }, body });

test('a valid exchange is forwarded, recorded byte for byte and clean', async () => {
  const response = await pull();
  assert.equal(response.status, 200);
  assert.deepEqual(Buffer.from(await response.arrayBuffer()), example('pull-response'));
  const [exchange] = proxy.exchanges;
  assert.equal(exchange?.endpoint, 'pull');
  assert.deepEqual(exchange?.requestBody, example('pull-request'));
  assert.equal(exchange?.upstream.length, 1);
  assert.deepEqual(exchange?.violations, []);
  assert.deepEqual(proxy.problems(), []);
  assert.deepEqual(proxy.countByEndpoint(), { pull: 1 });
});

test('a request that breaks its schema is a problem naming message, pointer and rule', async () => {
  const bad = JSON.parse(example('pull-request').toString()) as Record<string, unknown>;
  bad.limit = 0;
  await pull({}, Buffer.from(JSON.stringify(bad)));
  const [problem] = proxy.problems();
  assert.match(problem ?? '', /^pull-request of exchange #1 \(POST \/sync\/pull\): \/limit breaks rule "minimum"/);
});

test('a duplicate member is caught by the strict reader', async () => {
  await pull({}, Buffer.from('{"client_id":"a","client_id":"b"}'));
  assert.match(proxy.problems().join('\n'), /G1|duplicate/);
});

test('a request sent invalid on purpose is expected, and the intent header is not forwarded', async () => {
  await pull({ [INTENT_HEADER]: 'invalid-request' }, Buffer.from('{"nonsense":true}'));
  assert.deepEqual(proxy.problems(), []);
  assert.ok((proxy.exchanges[0]?.violations.length ?? 0) > 0, 'the violation is still recorded');
  assert.equal(stub.hits.length, 1);
});

test('a response that breaks its schema is a problem even for an intentional bad request', async () => {
  stub.answers.set('/ready', { status: 200, body: '{"ready":"yes"}' });
  try {
    await fetch(`${proxy.url}/ready`);
    assert.match(proxy.problems().join('\n'), /ready-response of exchange #1 \(GET \/ready\): \/ready breaks rule "type"/);
  } finally {
    stub.answers.set('/ready', { status: 200, body: '{"ready":true}' });
  }
});

test('an error status needs the envelope and Retry-After on 503', async () => {
  stub.answers.set('/sync/push', { status: 503, body: JSON.stringify({ error: { code: 'temporary_unavailable', message: 'later', retryable: true } }) });
  try {
    await fetch(`${proxy.url}/sync/push`, { method: 'POST', headers: { [INTENT_HEADER]: 'invalid-request' }, body: '{}' });
    assert.match(proxy.problems().join('\n'), /error-response .* breaks rule "E4"/);
  } finally {
    stub.answers.delete('/sync/push');
  }
});

test('drop-response: the server answered, the client gets a cut connection', async () => {
  proxy.inject({ endpoint: 'pull', fault: { kind: 'drop-response' } });
  await assert.rejects(pull());
  assert.equal(stub.hits.length, 1, 'the server did receive the request');
  const [exchange] = proxy.exchanges;
  assert.equal(exchange?.fault, 'drop-response');
  assert.equal(exchange?.upstream[0]?.status, 200);
  assert.deepEqual(exchange?.delivered && 'failure' in exchange.delivered ? exchange.delivered.failure : undefined, 'dropped');
  // Only the first pull is affected.
  assert.equal((await pull()).status, 200);
});

test('status faults answer 429 or 503 with Retry-After without reaching the server', async () => {
  proxy.inject({ endpoint: 'pull', fault: { kind: 'status', status: 429, retryAfter: '2' } });
  proxy.inject({ endpoint: 'pull', nth: 2, fault: { kind: 'status', status: 503, retryAfter: '1' } });
  const first = await pull();
  assert.equal(first.status, 429);
  assert.equal(first.headers.get('retry-after'), '2');
  assert.deepEqual(((await first.json()) as { error: { code: string } }).error.code, 'retry_later');
  const second = await pull();
  assert.equal(second.status, 503);
  assert.equal((await pull()).status, 200);
  assert.equal(stub.hits.length, 1, 'only the third request reached the server');
  assert.deepEqual(proxy.problems(), []);
});

test('delay holds the request before it reaches the server', async () => {
  proxy.inject({ endpoint: 'pull', fault: { kind: 'delay', ms: 300 } });
  const started = performance.now();
  assert.equal((await pull()).status, 200);
  assert.ok((stub.arrivals[0] ?? 0) - started >= 290, 'the request reached the server only after the delay');
  assert.equal(proxy.exchanges[0]?.fault, 'delay');
});

test('duplicate delivers the request twice and records both answers', async () => {
  proxy.inject({ endpoint: 'pull', fault: { kind: 'duplicate' } });
  assert.equal((await pull()).status, 200);
  assert.equal(stub.hits.length, 2);
  assert.deepEqual(stub.bodies[0], stub.bodies[1]);
  assert.equal(proxy.exchanges[0]?.upstream.length, 2);
  assert.deepEqual(proxy.countByEndpoint(), { pull: 1 });
});

test('truncate announces the full body and cuts the connection halfway', async () => {
  proxy.inject({ endpoint: 'pull', fault: { kind: 'truncate' } });
  const response = await pull();
  await assert.rejects(response.arrayBuffer());
  const delivered = proxy.exchanges[0]?.delivered;
  assert.ok(delivered && 'failure' in delivered && delivered.failure === 'truncated');
});

test('corrupt-byte alters exactly one byte and keeps the length', async () => {
  proxy.inject({ endpoint: 'pull', fault: { kind: 'corrupt-byte', offset: 10 } });
  const body = Buffer.from(await (await pull()).arrayBuffer());
  const original = example('pull-response');
  assert.equal(body.length, original.length);
  const differing = [...body].flatMap((byte, index) => (byte === original[index] ? [] : [index]));
  assert.deepEqual(differing, [10]);
  assert.deepEqual(proxy.problems(), [], 'the server answer itself was valid');
});

test('pause holds the committed answer until release', async () => {
  proxy.inject({ endpoint: 'pull', fault: { kind: 'pause' } });
  const sent = pull();
  await proxy.whenHeld(5_000);
  assert.equal(stub.hits.length, 1, 'the server already answered');
  assert.equal(proxy.exchanges[0]?.done, false);
  proxy.release();
  assert.equal((await sent).status, 200);
  await proxy.until((exchanges) => exchanges.length === 1, 5_000);
  assert.ok(isResponse(proxy.exchanges[0]?.delivered));
});

test('until rejects at its deadline', async () => {
  await assert.rejects(proxy.until((exchanges) => exchanges.length > 0, 50, 'a pull'), /a pull did not cross the proxy within 50 ms/);
});

test('a request path outside protocol 3 is forwarded and recorded as other', async () => {
  const status = await new Promise<number>((resolve, reject) => {
    const req = request(`${proxy.url}/__control/clock`, { method: 'POST' }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end('{}');
  });
  assert.equal(status, 400);
  assert.equal(proxy.exchanges[0]?.endpoint, 'other');
  assert.deepEqual(proxy.problems(), []);
});

test('send passes the bytes as given, with the token, and marks intent', async () => {
  const raw = '{"client_id":"a","client_id":"b"}';
  const answer = await send(proxy.url, 'POST', '/sync/pull', raw, { token: 'tok', intentionallyInvalid: true });
  assert.equal(answer.status, 200);
  assert.equal(stub.bodies[0]?.toString(), raw);
  assert.equal(proxy.exchanges[0]?.requestHeaders.authorization, 'Bearer tok');
  assert.deepEqual(proxy.problems(), [], 'the duplicate member was sent on purpose');
  assert.ok((proxy.exchanges[0]?.violations.length ?? 0) > 0);
});
