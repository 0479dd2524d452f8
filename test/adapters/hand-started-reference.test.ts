/**
 * The reference server certified as any third-party server is: started by
 * hand (`main.ts --test-controls --resettable`) on a database of its own and
 * named by a config file alone (generic HTTP adapter, control protocol, no
 * private channel). One requirement of each section that passes on the
 * built-in path must get the same status through the config; and a tampering
 * proxy that breaks one rule in the server's answers must fail the
 * requirement of that rule through the same path.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { type HandStartedReference, runConformance, startHandStartedReference } from '../../scripts/lib/hand-started-reference.ts';

// Reports are read after each run; the scratch directory goes with the test.
const scratch = mkdtempSync(join(tmpdir(), 'synchro-hand-started-test-'));
/**
 * One requirement per section that passes against the built-in reference path
 * (a small one of each). SYNC-SEED-001 builds seed artifact files: through the
 * config its builder is named as a command (`seedArtifact`).
 */
const ONE_PER_SECTION = ['SYNC-PROTO-004', 'SYNC-INTEG-003', 'SYNC-STATE-005', 'SYNC-SCOPE-001', 'SYNC-SEED-001'];

let server: HandStartedReference | undefined;
let configFile: string;

before(async () => {
  server = await startHandStartedReference(scratch, 'hand-started-secret');
  configFile = server.configFile;
});

after(async () => {
  await server?.stop();
  rmSync(scratch, { recursive: true, force: true });
});

/** Runs the CLI and returns each selected requirement's status from its conformance.json. */
async function run(name: string, args: string[]): Promise<Record<string, string>> {
  const { code, output, statuses } = await runConformance(join(scratch, name), args);
  assert.ok(code === 0 || code === 1, `the ${name} run ended with exit status ${code}:\n${output.slice(-3_000)}`);
  return statuses;
}

const tags = (ids: readonly string[]) => ids.map((id) => `@${id}`).join(' or ');

test('the hand-started reference certified through a config file gets the built-in path\'s status, one requirement per section', async () => {
  const selection = tags(ONE_PER_SECTION);
  const builtIn = await run('built-in', ['--tags', selection]);
  const viaConfig = await run('via-config', ['--server', configFile, '--tags', selection]);
  for (const id of ONE_PER_SECTION) {
    assert.equal(builtIn[id], 'passed', `${id} passes on the built-in path`);
    assert.equal(viaConfig[id], builtIn[id], `${id} through the config file`);
  }
});

test('a tampering proxy that breaks one rule fails that rule\'s requirement through the config path', async () => {
  // wire:long-server-version makes every push outcome's server_version 65 octets: SYNC-PROTO-004's first Rule.
  const tampered = await run('tampered', ['--server', configFile, '--tags', '@SYNC-PROTO-004', '--fault', 'wire:long-server-version']);
  assert.equal(tampered['SYNC-PROTO-004'], 'failed');
});
