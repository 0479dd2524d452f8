import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { ClientError } from '../../reference/client/errors.ts';
import { readResponse } from '../../reference/client/sync/response.ts';

const example = (name: string) => readFileSync(new URL(`../wire/examples/${name}.json`, import.meta.url), 'utf8');
const answer = (text: string) => ({ status: 200, retryAfter: undefined, body: new TextEncoder().encode(text) });

test('a valid connect response is read', () => {
  const value = readResponse('connect-response', answer(example('connect-response')), 'connecting', 0);
  assert.equal(value.protocol_version, 3);
});

for (const [member, spelling] of [
  ['protocol_version', '3.0'],
  ['client_generation', '2e0'],
  ['scope_set_version', '-0'],
] as const) {
  test(`an envelope integer spelled ${spelling} is refused although its value would pass`, () => {
    const text = example('connect-response').replace(new RegExp(`"${member}":\\s*-?[0-9]+`), `"${member}": ${spelling}`);
    assert.notEqual(text, example('connect-response'), 'the example carries the member');
    assert.throws(
      () => readResponse('connect-response', answer(text), 'connecting', 0),
      (e: unknown) => e instanceof ClientError && e.code === 'invalid_response' && e.message.includes(spelling),
    );
  });
}

test('an integer past the portable range is refused', () => {
  const text = example('connect-response').replace(/"client_generation":\s*[0-9]+/, '"client_generation": 9007199254740993');
  assert.throws(() => readResponse('connect-response', answer(text), 'connecting', 0), (e: unknown) => e instanceof ClientError && e.code === 'invalid_response');
});

test('a server_time with an offset is refused', () => {
  const text = example('connect-response').replace(/"server_time":\s*"[^"]*"/, '"server_time": "2026-09-01T10:20:00.000000+02:00"');
  assert.throws(() => readResponse('connect-response', answer(text), 'connecting', 0), (e: unknown) => e instanceof ClientError && e.code === 'invalid_response');
});
