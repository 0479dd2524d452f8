import assert from 'node:assert/strict';
import { test } from 'node:test';
import { dispatchSchema, type LineageStep } from '../../reference/server/connect/dispatch.ts';

const h = (n: number) => String(n).repeat(64).slice(0, 64);

function lineage(classes: string[], affected: Record<number, string[]> = {}): Map<number, LineageStep> {
  const out = new Map<number, LineageStep>();
  classes.forEach((cls, k) => {
    const version = k + 1;
    out.set(version, {
      version,
      hash: h(version),
      transitionClass: cls,
      parent: k === 0 ? null : { version: k, hash: h(k) },
      affectedScopes: affected[version] ?? [],
    });
  });
  return out;
}

const run = (history: Map<number, LineageStep>, reference: number, assigned: string[], extra: { fresh?: boolean; reset?: boolean } = {}) =>
  dispatchSchema({
    fresh: extra.fresh ?? false,
    reset: extra.reset ?? false,
    reference: { version: reference, hash: h(reference) },
    current: { version: history.size, hash: h(history.size) },
    history,
    assigned,
  });

test('row by row: fresh, exact, Class 2, Class 3 affected or not, Class 4, unknown lineage, reset', () => {
  const c2 = lineage(['initial', 'class_2', 'class_2']);
  assert.deepEqual(run(c2, 3, ['user:u'], { fresh: true }), { action: 'replace' });
  assert.deepEqual(run(c2, 3, ['user:u']), { action: 'none' });
  assert.deepEqual(run(c2, 1, ['user:u']), { action: 'replace' });
  const c3 = lineage(['initial', 'class_3'], { 2: ['templates_public', 'team:z'] });
  assert.deepEqual(run(c3, 1, ['user:u', 'templates_public']), { action: 'rebuild_local', affectedScopes: ['templates_public'] });
  assert.deepEqual(run(c3, 1, ['user:u']), { action: 'replace' });
  const c4 = lineage(['initial', 'class_4', 'class_2']);
  assert.deepEqual(run(c4, 1, ['user:u']), { action: 'unsupported', reason: 'incompatible_schema_transition' });
  assert.deepEqual(run(c4, 2, ['user:u']), { action: 'replace' });
  assert.deepEqual(
    dispatchSchema({ fresh: false, reset: false, reference: { version: 2, hash: h(9) }, current: { version: 3, hash: h(3) }, history: c2, assigned: [] }),
    { action: 'unsupported', reason: 'unknown_schema_lineage' },
  );
  assert.deepEqual(run(c4, 1, ['b', 'a', 'a'], { reset: true }), { action: 'rebuild_local', affectedScopes: ['a', 'b'] });
  assert.deepEqual(run(c4, 1, [], { reset: true }), { action: 'replace' });
});
