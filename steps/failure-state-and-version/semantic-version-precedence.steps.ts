/**
 * SYNC-STATE-005 Semantic Version Precedence
 * (features/failure-state-and-version/semantic-version-precedence.feature):
 * the steps only this requirement uses. Steps it shares with others are in
 * steps/common/, the helpers behind them in steps/support/.
 */
import { Given, Then, When } from '@cucumber/cucumber';
import fc from 'fast-check';
import { parseJson } from '../../harness/codec/index.ts';
import { compareVersions, isSemVer, parseSemVer } from '../../harness/codec/semver.ts';
import { processPhrase } from '../support/client-mode.ts';
import { member } from '../support/reply.ts';
import { literal } from '../support/schema-and-versions/manifests.ts';
import { stateOf } from '../support/schema-and-versions/state.ts';
import { exchangesOf, objectBodyOf } from '../support/exchanges.ts';
import { versionsNear } from '../support/schema-and-versions/version-arbitrary.ts';
import type { SyncWorld } from '../support/world.ts';

processPhrase(/^client "([^"]+)" of user "[^"]+" is opened with app version /);

processPhrase(/^client "([^"]+)" has stopped in state "[a-z_]+" with a failure that is not retryable$/);

processPhrase(/^client "([^"]+)" sent no connect request$/);

processPhrase(/^the connect request of client "([^"]+)" has /);

/** A raw connect of a fresh identity with `appVersion` (any JSON value), as the harness authors it. */
async function rawConnect(world: SyncWorld, clientId: string, appVersion: unknown) {
  const probe = world.newWire(`version-probe`, 'alice');
  const body = {
    client_id: clientId,
    platform: 'test',
    app_version: appVersion,
    protocol_version: 3,
    schema: { version: 0, hash: '' },
    scope_set_version: 0,
    known_scopes: {},
  };
  return await probe.post('/sync/connect', undefined, { raw: JSON.stringify(body), endpoint: 'connect', invalid: !isSemVer(appVersion) });
}

Given('the server is provisioned with minimum client version {string}', async function (this: SyncWorld, version: string) {
  const server = await this.readyServer();
  if (!server.provision) throw new Error(`server adapter "${server.id}" has no provision capability to set a minimum client version`);
  const state = stateOf(this);
  try {
    await server.provision.exec(`SELECT synchro.synchro_set_minimum_client_version(${literal(version)})`);
    state.minimum = { version };
  } catch (error) {
    // Whether a refusal is right is for the Then step to judge.
    state.minimum = { version, error: error as Error };
  }
});

function provisionedMinimum(world: SyncWorld): string {
  const minimum = stateOf(world).minimum;
  if (minimum === undefined) throw new Error('no minimum client version was provisioned in this scenario');
  world.assert.equal(minimum.error?.message, undefined, `provisioning the minimum client version ${minimum.version} failed`);
  return minimum.version;
}

Then('the provisioning fails, or every connect is answered 426 with error code {string}', async function (this: SyncWorld, code: string) {
  const minimum = stateOf(this).minimum;
  this.assert.ok(minimum !== undefined, 'no minimum client version was provisioned in this scenario');
  this.assert.equal(isSemVer(minimum.version), false, `the scenario's minimum ${minimum.version} is meant to be malformed`);
  if (minimum.error !== undefined) return;
  // Accepted anyway: then nothing may get past the gate, whatever version it announces.
  const answers: { version: string; status: number; code: unknown }[] = [];
  for (const [i, version] of ['0.0.1', '1.0.0', '1.0.0-rc.1', '99.99.99'].entries()) {
    const reply = await rawConnect(this, `malformed-minimum-${i}`, version);
    answers.push({ version, status: reply.status, code: reply.json?.error?.code });
  }
  this.assert.equal(
    answers,
    answers.map((a) => ({ version: a.version, status: 426, code })),
    `connects after the server accepted the malformed minimum ${minimum.version}`,
  );
});

Then(/^the connect is (accepted|refused)$/, function (this: SyncWorld, verdict: string) {
  const minimum = provisionedMinimum(this);
  const reply = this.lastReply();
  if (verdict === 'accepted') {
    this.assert.equal(reply.status, 200, `connect under minimum ${minimum} answered ${reply.status}: ${reply.text.slice(0, 300)}`);
  } else {
    this.assert.equal(
      { status: reply.status, code: reply.json?.error?.code, minimum: reply.json?.error?.minimum_client_version },
      { status: 426, code: 'upgrade_required', minimum },
      `connect under minimum ${minimum}: ${reply.text.slice(0, 300)}`,
    );
  }
});

Then(/^the error body has neither "([^"]+)" nor "([^"]+)"$/, function (this: SyncWorld, first: string, second: string) {
  const reply = this.lastReply();
  const error = reply.json?.error as Record<string, unknown> | undefined;
  this.assert.ok(error !== undefined, `the response has no error body: ${reply.text.slice(0, 300)}`);
  this.assert.equal([first, second].filter((m) => Object.hasOwn(error, m)), [], `members of the error body ${reply.text.slice(0, 300)}`);
});

When(
  /^the harness connects (\d+) fresh clients whose app versions are generated well-formed SemVer strings, with cores near (\d+)\.(\d+)\.(\d+), prerelease lists of up to (\d+) identifiers mixing numbers and ASCII words, and optional build metadata$/,
  async function (this: SyncWorld, count: number, major: number, minor: number, patch: number, identifiers: number) {
    const minimum = provisionedMinimum(this);
    const probes: { version: unknown; status: number; code: unknown }[] = [];
    const state = stateOf(this);
    state.property = { minimum, probes };
    let n = 0;
    const property = fc.asyncProperty(versionsNear([BigInt(major), BigInt(minor), BigInt(patch)], Number(identifiers)), async (version) => {
      n += 1;
      const reply = await rawConnect(this, `gate-generated-${n}`, version);
      probes.push({ version, status: reply.status, code: reply.json?.error?.code });
      const expected = compareVersions(version, minimum) >= 0 ? 200 : 426;
      if (reply.status !== expected || (expected === 426 && reply.json?.error?.code !== 'upgrade_required')) {
        throw new Error(`app version ${version} against minimum ${minimum}: expected ${expected}, got ${reply.status} ${reply.text.slice(0, 200)}`);
      }
    });
    try {
      // fast-check's report names the seed, the path and the shrunk counterexample.
      await fc.assert(property, { numRuns: Number(count), endOnFailure: true });
    } catch (error) {
      state.property.failure = (error as Error).message;
    }
  },
);

Then(
  /^each connect was accepted exactly when the harness's SemVer 2\.0\.0 comparison ranks its app version at or above "([^"]+)"$/,
  function (this: SyncWorld, minimum: string) {
    const run = stateOf(this).property;
    if (run === undefined) throw new Error('no generated connects ran in this scenario');
    this.assert.equal(run.minimum, minimum, 'the minimum the generated connects ran against');
    this.assert.ok(run.failure === undefined, run.failure ?? '');
    const accepted = run.probes.filter((p) => p.status === 200).length;
    // A generator that never straddles the minimum would make the property vacuous.
    this.assert.ok(accepted > 0 && accepted < run.probes.length, `of ${run.probes.length} generated versions ${accepted} were accepted: both sides of ${minimum} must be drawn`);
  },
);

Then(/^when the status is 426 the error member "([^"]+)" equals (\d+) and "([^"]+)" equals (-?\d+)$/, function (this: SyncWorld, required: string, value: number, received: string, got: number) {
  const reply = this.lastReply();
  this.assert.ok(reply.status === 200 || reply.status === 426, `connect answered ${reply.status}: ${reply.text.slice(0, 300)}`);
  if (reply.status !== 426) return;
  this.assert.equal(
    { required: member(reply.json, `/error/${required}`), received: member(reply.json, `/error/${received}`), code: reply.json?.error?.code },
    { required: Number(value), received: Number(got), code: 'upgrade_required' },
    `426 body ${reply.text.slice(0, 300)}`,
  );
});

/** The exact text of the number token at `pointer` in a JSON text, or undefined when it is not a number there. */
function numberToken(text: string, pointer: string): string | undefined {
  let found: string | undefined;
  parseJson(text, {
    onNumber: (raw, path) => {
      if (path === pointer) found = raw;
    },
  });
  return found;
}

Then(/^the raw JSON token of "([^"]+)" in the response is exactly (\d+)$/, function (this: SyncWorld, pointer: string, token: number) {
  const reply = this.lastReply();
  this.assert.equal(reply.status, 200, `${reply.endpoint} answered ${reply.status}: ${reply.text.slice(0, 300)}`);
  this.assert.equal(numberToken(reply.text, pointer), String(token), `token of ${pointer} in ${reply.text.slice(0, 300)}`);
});

Given(/^client "([^"]+)" of user "([^"]+)" is opened with app version "(.*)"$/, async function (this: SyncWorld, name: string, user: string, version: string) {
  this.clientUsers.set(name, user);
  await this.process(name, { appVersion: version });
  this.assert.ok(this.clients.has(name), `client "${name}" was not started`);
});

Then('client {string} sent no connect request', async function (this: SyncWorld, name: string) {
  this.assert.ok(this.lastSync.has(name), `client "${name}" was never asked to sync, so not connecting proves nothing`);
  const sent = await exchangesOf(this, name, { unfinished: true });
  this.assert.equal(
    sent.filter((e) => e.endpoint === 'connect').map((e) => objectBodyOf(e.requestBody)?.app_version),
    [],
    `app versions client "${name}" announced`,
  );
});

Then('client {string} has stopped in state {string} with a failure that is not retryable', async function (this: SyncWorld, name: string, state: string) {
  const client = await this.process(name);
  const status = await client.call<{ status: string; failure?: { retryable: boolean; code: string } }>('getStatus');
  this.assert.equal({ state: status.status, retryable: status.failure?.retryable }, { state, retryable: false }, `status of client "${name}": ${JSON.stringify(status.failure)}`);
});

async function firstConnect(world: SyncWorld, name: string) {
  const connect = (await exchangesOf(world, name, { unfinished: true })).find((e) => e.endpoint === 'connect');
  world.assert.ok(connect, `client "${name}" sent no connect request`);
  return connect;
}

Then(/^the connect request of client "([^"]+)" has "([^"]+)" equal to "(.*)"$/, async function (this: SyncWorld, name: string, pointer: string, value: string) {
  const connect = await firstConnect(this, name);
  const body = objectBodyOf(connect.requestBody);
  this.assert.equal(member(body, pointer), value, `member ${pointer} of the connect request of client "${name}"`);
  this.assert.ok(parseSemVer(value) !== undefined, `the scenario's app version ${value} is well formed`);
});

Then(/^the raw JSON token of "([^"]+)" in that request is exactly (\d+)$/, async function (this: SyncWorld, pointer: string, token: number) {
  const names = [...this.clients.keys()];
  this.assert.equal(names.length, 1, 'exactly one client process runs in this scenario');
  const connect = await firstConnect(this, names[0] as string);
  this.assert.equal(numberToken(connect.requestBody.toString('utf8'), pointer), String(token), `token of ${pointer} in ${connect.requestBody.toString('utf8').slice(0, 300)}`);
});
