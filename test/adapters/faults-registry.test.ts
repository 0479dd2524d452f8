/**
 * The fault registry and the code agree: every wire fault is made of proxy
 * rules, and the server and client switches are exactly the lines marked in
 * reference/, each name marked once, on the side its prefix names.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { FAULTS, findFault, markedSwitches, switchName } from '../../harness/faults/registry.ts';
import { ENDPOINTS } from '../../harness/proxy/routes.ts';

test('fault names are unique, prefixed by their kind and match the records schema', () => {
  const names = FAULTS.map((fault) => fault.name);
  assert.equal(new Set(names).size, names.length);
  for (const fault of FAULTS) {
    assert.match(fault.name, /^[a-z]+:[a-z0-9-]+$/);
    assert.ok(fault.name.startsWith(`${fault.kind}:`), `${fault.name} is of kind ${fault.kind}`);
    // What a fault breaks is said once, in invariants.yaml; the registry only knows how it is made.
    assert.ok(fault.kind === 'wire' ? (fault.rules?.length ?? 0) > 0 : (fault.places?.length ?? 0) > 0, `${fault.name} has no mechanism`);
    assert.equal('description' in fault, false);
  }
  assert.equal(findFault('wire:push-429')?.kind, 'wire');
  assert.equal(switchName({ name: 'server:skip-fence', kind: 'server' }), 'skip-fence');
});

test('every wire fault is made of proxy rules on protocol endpoints, covering every fault kind', () => {
  for (const fault of FAULTS.filter((f) => f.kind === 'wire')) {
    assert.ok((fault.rules?.length ?? 0) > 0, `${fault.name} has no proxy rule`);
    for (const rule of fault.rules ?? []) if (rule.endpoint) assert.ok((ENDPOINTS as readonly string[]).includes(rule.endpoint));
  }
  const kinds = new Set(FAULTS.flatMap((f) => f.rules ?? []).map((rule) => rule.fault.kind));
  assert.deepEqual([...kinds].sort(), ['corrupt-byte', 'delay', 'drop-response', 'duplicate', 'rewrite', 'status', 'truncate']);
});

test('the row-under-digest wire fault edits one non-key text value of each pull change row and keeps its checksum', () => {
  const rule = findFault('wire:pull-row-edited-under-digest')?.rules?.[0];
  assert.ok(rule?.fault.kind === 'rewrite' && rule.endpoint === 'pull');
  const transform = rule.fault.transform;
  const checksum = { algorithm: 'sha256', version: 1, encoding: 'hex', digest: 'ab'.repeat(32) };
  const body = {
    changes: [
      { pk: { f1: 't-1' }, row: { f1: 't-1', f2: 'title' }, row_checksum: checksum },
      { pk: { f1: 't-2' }, op: 'delete' },
    ],
  };
  const edited = transform(structuredClone(body), undefined as never) as typeof body;
  assert.deepEqual(edited.changes[0]?.row, { f1: 't-1', f2: 'title~' });
  assert.deepEqual(edited.changes[0]?.row_checksum, checksum);
  assert.deepEqual(edited.changes[1], body.changes[1]);
  assert.equal(transform({ changes: [{ pk: { f1: 't-3' }, op: 'delete' }] }, undefined as never), undefined, 'a body without rows is left alone');
});

test('switches are discovered from marked lines, with their places', () => {
  const dir = mkdtempSync(join(tmpdir(), 'synchro-marks-'));
  try {
    mkdirSync(join(dir, 'reference/server'), { recursive: true });
    writeFileSync(join(dir, 'reference/server/a.ts'), "const x = 1;\nif (fault('skip-fence')) return; // fault: server:skip-fence\n// fault: server:<name> is how a switch is marked\n");
    writeFileSync(join(dir, 'reference/server/b.ts'), 'x(); // fault: server:skip-fence\n');
    assert.deepEqual(markedSwitches(join(dir, 'reference/')), [{ name: 'server:skip-fence', kind: 'server', places: ['reference/server/a.ts:2', 'reference/server/b.ts:1'] }]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

// The seed artifact exporter (reference/seed-artifact/) is server code: it runs with the server's switches.
test('each switch in reference/ is marked exactly once, on its own side', () => {
  for (const marked of markedSwitches()) {
    assert.equal(marked.places.length, 1, `${marked.name} is marked more than once: ${marked.places.join(', ')}`);
    assert.match(marked.places[0] ?? '', marked.kind === 'server' ? /^reference\/(server|seed-artifact)\// : /^reference\/(client\/|driver\.ts)/, `${marked.name} is marked outside reference/${marked.kind}`);
  }
});
