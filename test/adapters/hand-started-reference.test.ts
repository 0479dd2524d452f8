/**
 * The reference server certified as any third-party server is: started by
 * hand (`main.ts --test-controls --resettable`) on a database of its own and
 * named by a config file alone (generic HTTP adapter, control protocol, no
 * private channel). A small requirement of most sections, each passing on the
 * built-in path (the conformance stage of `npm test` requires that), must
 * pass through the config too; and a tampering proxy that breaks one rule in
 * the server's answers must fail the requirement of that rule through the
 * same path. `scripts/compare-config-path.ts` compares the whole suite.
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
 * The smallest passing requirement of most sections (few scenarios: each one
 * resets the hand-started server's database). SYNC-SEED-001 builds seed
 * artifact files: through the config its builder is named as a command
 * (`seedArtifact`).
 */
const SMALL_PER_SECTION = ['SYNC-PROTO-007', 'SYNC-MUT-008', 'SYNC-INTEG-003', 'SYNC-STATE-003', 'SYNC-PULL-012', 'SYNC-SCOPE-005', 'SYNC-SEED-001'];

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

test('the hand-started reference certified through a config file passes what the built-in path passes, a small requirement per section', async () => {
  const viaConfig = await run('via-config', ['--server', configFile, '--tags', tags(SMALL_PER_SECTION)]);
  for (const id of SMALL_PER_SECTION) assert.equal(viaConfig[id], 'passed', `${id} passes on the built-in path and must through the config file`);
});

test('a tampering proxy that breaks one rule fails that rule\'s requirement through the config path', async () => {
  // wire:pull-tombstone-for-scope-exit turns the rowless delete of a row that left a scope into a delete carrying the row: an invented tombstone (SYNC-MUT-008).
  const tampered = await run('tampered', ['--server', configFile, '--tags', '@SYNC-MUT-008', '--fault', 'wire:pull-tombstone-for-scope-exit']);
  assert.equal(tampered['SYNC-MUT-008'], 'failed');
});
