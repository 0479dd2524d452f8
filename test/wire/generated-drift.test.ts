import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { GENERATED_TYPES_PATH, generateWireTypes } from '../../harness/wire/generate-types.ts';
import { GENERATED_VALIDATORS_PATH, generateWireValidators } from '../../harness/wire/generate-validators.ts';

test('committed wire types equal what the schemas generate (run `npm run generate` after a schema change)', async () => {
  const committed = readFileSync(GENERATED_TYPES_PATH, 'utf8');
  assert.equal(committed, await generateWireTypes());
});

test('generated types carry the generated-file header', () => {
  assert.match(readFileSync(GENERATED_TYPES_PATH, 'utf8'), /^\/\*\*\n \* Generated from schemas\/\*\.schema\.json/);
});

test('committed standalone validators equal what the schemas generate (run `npm run generate` after a schema change)', () => {
  assert.equal(readFileSync(GENERATED_VALIDATORS_PATH, 'utf8'), generateWireValidators());
});
