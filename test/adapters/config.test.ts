/**
 * Bad adapter input is refused before any scenario runs, with the file, the
 * line and a fix; good configs produce working tokens.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { jwtVerify } from 'jose';
import { loadAdapterConfig } from '../../harness/adapters/config.ts';
import { tokenFor } from '../../harness/adapters/token.ts';
import { InputError } from '../../harness/errors.ts';
import { loadRunConfig } from '../../harness/run/run-config.ts';
import { openSession } from '../../harness/run/session.ts';
import { startStubServer } from './fixtures/stub-server.ts';

const scratch = mkdtempSync(join(tmpdir(), 'synchro-adapter-config-test-'));
after(() => rmSync(scratch, { recursive: true, force: true }));
const root = new URL('../../', import.meta.url).pathname;

let count = 0;
function file(text: string): string {
  count += 1;
  const path = join(scratch, `config-${count}.json`);
  writeFileSync(path, text);
  return path;
}

const server = (extra: object = {}, baseUrl = 'http://127.0.0.1:9') => JSON.stringify({ role: 'server', kind: 'http', id: 'acme', baseUrl, auth: { jwt: { secret: 's3cret' } }, ...extra }, null, 2);

function inputError(pattern: RegExp, line?: number) {
  return (error: unknown) => {
    assert.ok(error instanceof InputError, `expected an InputError, got ${String(error)}`);
    assert.match(error.message, pattern);
    assert.match(error.message, /Fix: /);
    if (line !== undefined) assert.equal(error.line, line);
    return true;
  };
}

test('malformed JSON is refused with the line of the problem', () => {
  const path = file('{\n  "role": "server",\n  "kind": "http",,\n}');
  assert.throws(() => loadAdapterConfig('server', path), inputError(/not valid JSON/, 3));
});

test('duplicate members are refused', () => {
  assert.throws(() => loadAdapterConfig('server', file('{"role":"server","role":"client"}')), inputError(/duplicate|not valid JSON/));
});

test('an unknown capability is named with its line and the known ones', () => {
  const path = file(server({ capabilities: ['provision', 'teleport'] }));
  assert.throws(() => loadAdapterConfig('server', path), inputError(/unknown server capability "teleport".*Fix: use only provision, sourceSql/s, 11));
});

test('a client capability in a server config is unknown there', () => {
  assert.throws(() => loadAdapterConfig('server', file(server({ capabilities: ['crash'] }))), inputError(/unknown server capability "crash"/));
});

test('implementation forms are declared per role, and an unknown or misplaced one is refused with its line', () => {
  assert.deepEqual((loadAdapterConfig('server', file(server({ forms: ['pgrx-extension', 'postgresql-extension'] }))) as { forms?: string[] }).forms, ['pgrx-extension', 'postgresql-extension']);
  const path = file(server({ forms: ['pgrx-extension', 'react-native-binding'] }));
  assert.throws(() => loadAdapterConfig('server', path), inputError(/\/forms\/1 must be one of \["postgresql-extension","pgrx-extension"\]/, 11));
  const client = JSON.stringify({ role: 'client', kind: 'process', id: 'rn', command: ['node', 'client.js'], forms: ['react-native-binding'] });
  assert.deepEqual((loadAdapterConfig('client', file(client)) as { forms?: string[] }).forms, ['react-native-binding']);
});

test('a missing member and a wrong role are explained', () => {
  assert.throws(() => loadAdapterConfig('server', file('{"role":"server","kind":"http","id":"x","baseUrl":"http://h:1"}')), inputError(/auth/));
  assert.throws(() => loadAdapterConfig('client', file(server())), inputError(/role "server" but was given as the client adapter/));
});

test('a config file that does not exist, or an unknown adapter id, is an input error', async () => {
  await assert.rejects(openSession({ server: join(scratch, 'missing.json'), client: 'reference', root }), inputError(/cannot read/));
  await assert.rejects(openSession({ server: 'acme', client: 'reference', root }), inputError(/neither a known server adapter nor an adapter config file/));
});

test('a server that does not answer is an input error before any scenario', async () => {
  await assert.rejects(openSession({ server: file(server()), client: 'reference', root }), inputError(/does not answer GET \/ready/));
});

test('the generic adapter refuses capabilities it cannot provide, and SQL ones without a DSN', async () => {
  const stub = await startStubServer();
  try {
    await assert.rejects(openSession({ server: file(server({ capabilities: ['capture'] }, stub.url)), client: 'reference', root }), inputError(/"capture" capability is declared but no "controlUrl" is configured/));
    await assert.rejects(openSession({ server: file(server({ capabilities: ['provision'] }, stub.url)), client: 'reference', root }), inputError(/needs a PostgreSQL DSN/));
    const session = await openSession({ server: file(server({}, stub.url)), client: 'reference', root });
    assert.deepEqual(session.server.capabilities, []);
    await session.close();
  } finally {
    await stub.close();
  }
});

test('a module adapter config names a module that exists, exports openServer and passes its preflight', async () => {
  const moduleConfig = (module: string, extra: object = {}) => JSON.stringify({ role: 'server', kind: 'module', id: 'acme', module, capabilities: [], ...extra }, null, 2);
  await assert.rejects(openSession({ server: file(moduleConfig('./no-such-adapter.ts')), client: 'reference', root }), inputError(/adapter module \.\/no-such-adapter\.ts does not exist/));
  const empty = join(scratch, 'empty-adapter.ts');
  writeFileSync(empty, 'export const nothing = 1;\n');
  await assert.rejects(openSession({ server: file(moduleConfig(empty)), client: 'reference', root }), inputError(/exports no openServer function/));
  const stubModule = new URL('./fixtures/stub-module-adapter.ts', import.meta.url).pathname;
  await assert.rejects(openSession({ server: file(moduleConfig(stubModule, { options: { baseUrl: 'http://127.0.0.1:9' } })), client: 'reference', root }), inputError(/preflight failed/));
  assert.throws(() => loadAdapterConfig('server', file(JSON.stringify({ role: 'server', kind: 'module', id: 'acme', module: 'x.ts' }))), inputError(/capabilities/));
});

test('a client process that does not speak the protocol is an input error', async () => {
  const stub = await startStubServer();
  try {
    const client = file(JSON.stringify({ role: 'client', kind: 'process', id: 'echo', command: [process.execPath, '-e', 'console.log("hello")'] }));
    await assert.rejects(openSession({ server: file(server({}, stub.url)), client, root }), inputError(/does not answer the adapter protocol/));
  } finally {
    await stub.close();
  }
});

test('JWT tokens carry the user id in sub (or the configured claim) and verify with the secret', async () => {
  const secret = new TextEncoder().encode('s3cret');
  const plain = await tokenFor({ jwt: { secret: 's3cret' } }, 'alice', scratch);
  assert.equal((await jwtVerify(plain, secret)).payload.sub, 'alice');
  const custom = await tokenFor({ jwt: { secret: 's3cret', userClaim: 'uid', claims: { iss: 'acme' } } }, 'bob', scratch);
  const { payload, protectedHeader } = await jwtVerify(custom, secret);
  assert.deepEqual([payload.uid, payload.iss, protectedHeader.alg], ['bob', 'acme', 'HS256']);
});

test('a token command gets the user id and must print exactly one token', async () => {
  assert.equal(await tokenFor({ command: [process.execPath, '-e', 'console.log("tok-" + process.argv[1])', '{user}'] }, 'carol', scratch), 'tok-carol');
  await assert.rejects(tokenFor({ command: [process.execPath, '-e', 'console.log("two words")'] }, 'carol', scratch), /more than one word/);
  await assert.rejects(tokenFor({ command: [process.execPath, '-e', 'process.exit(4)'] }, 'carol', scratch), /failed for user "carol"/);
});

test('the run config defaults to the reference pair and checks its members', () => {
  assert.deepEqual(loadRunConfig(join(scratch, 'absent.json'), false), { server: 'reference', client: 'reference', dir: scratch });
  assert.throws(() => loadRunConfig(join(scratch, 'absent.json'), true), inputError(/does not exist/));
  assert.throws(() => loadRunConfig(file('{"server":"reference","sever":"x"}'), false), inputError(/unknown member "sever"/));
  assert.throws(() => loadRunConfig(file('{"server":42}'), false), inputError(/"server" must be an adapter id/));
  const inline = loadRunConfig(file('{"server":{"role":"server"},"parallel":3}'), false);
  assert.equal(inline.parallel, 3);
  assert.equal(typeof inline.server, 'object');
});

test('run exits 2 on a bad adapter config and writes no report', { skip: !existsSync(join(root, '../shared/seeds/invariants-catalog.md')) && 'the catalog is not beside the checkout' }, () => {
  const out = join(scratch, 'reports');
  const result = spawnSync(process.execPath, ['harness/cli.ts', 'run', '--server', file(server({ capabilities: ['teleport'] })), '--out', out], { cwd: root, encoding: 'utf8' });
  assert.equal(result.status, 2, result.stderr);
  assert.match(result.stderr, /unknown server capability "teleport"/);
  assert.equal(existsSync(join(out, 'conformance.json')), false);
});

test('the example configs are valid', () => {
  assert.equal(loadAdapterConfig('server', join(root, 'examples/http-server.json')).id, 'my-server');
  assert.equal(loadAdapterConfig('client', join(root, 'examples/python-client/adapter.json')).id, 'python-sample');
});

test('a client start-up deadline is a whole number of milliseconds from 1000 to 600000, named by its line', () => {
  const client = (extra: object) => JSON.stringify({ role: 'client', kind: 'process', id: 'slow', command: ['true'], ...extra }, null, 2);
  assert.equal((loadAdapterConfig('client', file(client({ startupDeadlineMs: 60_000 }))) as { startupDeadlineMs?: number }).startupDeadlineMs, 60_000);
  assert.throws(() => loadAdapterConfig('client', file(client({ startupDeadlineMs: 10 }))), inputError(/startupDeadlineMs/, 8));
  assert.throws(() => loadAdapterConfig('client', file(client({ startupDeadlineMs: '30s' }))), inputError(/startupDeadlineMs/, 8));
});
