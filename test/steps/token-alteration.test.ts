/**
 * The forged-token scenarios alter a genuine token by one character; the
 * altered token must still decode (so the server's MAC check is what refuses
 * it), for every last character a 32-octet MAC can end in.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { alteredBase64url } from '../../steps/support/opaque-tokens/alteration.ts';

test('a swapped last character changes the decoded octets and stays canonical base64url', () => {
  for (let last = 0; last < 256; last += 1) {
    const mac = Buffer.alloc(32, 7);
    mac[31] = last;
    const token = `ic1.payload.${mac.toString('base64url')}`;
    const altered = alteredBase64url(token, 'with its last character replaced by another base64url one') as string;
    const segment = altered.slice(altered.lastIndexOf('.') + 1);
    const decoded = Buffer.from(segment, 'base64url');
    assert.equal(decoded.length, 32);
    assert.equal(decoded.toString('base64url'), segment, `the altered segment of a MAC ending in ${last} is canonical`);
    assert.notDeepEqual(decoded, mac);
  }
});
