import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { parseCatalog, readCatalog } from '../../harness/catalog/parse.ts';
import { baseSlug, Slugger } from '../../harness/catalog/slug.ts';
import { InputError } from '../../harness/errors.ts';
import { scratchDir } from '../support/scratch-dir.ts';

const fixture = (name: string) => new URL(`./fixtures/${name}`, import.meta.url).pathname;

test('slugs follow GitHub: lowercase, punctuation dropped, each space a hyphen', () => {
  assert.equal(baseSlug('Pull, Cursor, And Rebuild Invariants'), 'pull-cursor-and-rebuild-invariants');
  assert.equal(baseSlug('Pull-Time Scope Reconciliation'), 'pull-time-scope-reconciliation');
  assert.equal(baseSlug('No Extra Hot-Path Network Hop For Core Sync Logic'), 'no-extra-hot-path-network-hop-for-core-sync-logic');
  assert.equal(baseSlug("Client’s snake_case & Ünïcode 42"), 'clients-snake_case--ünïcode-42');
});

test('repeated slugs get -1, -2 across all heading levels, and suffixes are reserved', () => {
  const slugger = new Slugger();
  assert.deepEqual(['Rule', 'Rule', 'Rule 1', 'Rule'].map((text) => slugger.slug(text)), ['rule', 'rule-1', 'rule-1-1', 'rule-2']);
});

test('level-two headings are sections and level-three headings are invariants', () => {
  const catalog = readCatalog(fixture('small-catalog.md'));
  assert.deepEqual(catalog.sections.map((s) => [s.title, s.invariants.length]), [['Purpose', 0], ['Alpha Invariants', 2], ['Beta Invariants', 1]]);
  assert.deepEqual(catalog.invariants.map((i) => [i.title, i.anchor, i.section, i.line]), [
    ['First Rule', 'first-rule', 'Alpha Invariants', 9],
    ['Second Rule', 'second-rule', 'Alpha Invariants', 13],
    ['Third Rule', 'third-rule', 'Beta Invariants', 19],
  ]);
  assert.equal(catalog.invariants[0]?.body, 'Servers MUST do the first thing.');
  assert.match(catalog.invariants[0]?.bodySha256 ?? '', /^[0-9a-f]{64}$/);
  assert.equal(catalog.sha256.length, 64);
});

test('front matter, fences of every length and character, and duplicate slugs are handled', () => {
  const catalog = readCatalog(fixture('traps.mdx'));
  assert.deepEqual(
    catalog.headings.map((h) => [h.level, h.anchor]),
    [
      [1, 'catalog-with-traps'],
      [2, 'section-one'],
      [3, 'fenced-rule'],
      [3, 'fenced-rule-1'],
      [4, 'detail-heading'],
      [2, 'fenced-rule-2'],
      [3, 'punctuation-rules-emphasis--code'],
    ],
  );
  const [first, second, third] = catalog.invariants;
  assert.match(first?.body ?? '', /### Not A Heading Inside Four Backticks/);
  assert.match(first?.body ?? '', /## Still code/);
  assert.match(first?.body ?? '', /After the fence\./);
  assert.match(second?.body ?? '', /#### Detail Heading/);
  assert.equal(second?.section, 'Section One');
  assert.equal(third?.title, "Punctuation: Rule's Emphasis & Code!");
  assert.equal(third?.section, 'Fenced Rule');
  assert.match(third?.body ?? '', /Unterminated fence hides the rest/);
});

test('a body change changes the hash; CRLF line ends do not', () => {
  const text = readFileSync(fixture('small-catalog.md'), 'utf8');
  const base = parseCatalog(text, 'a.md').invariants[0]?.bodySha256;
  assert.equal(parseCatalog(text.replaceAll('\n', '\r\n'), 'b.md').invariants[0]?.bodySha256, base);
  assert.notEqual(parseCatalog(text.replace('first thing', 'first things'), 'c.md').invariants[0]?.bodySha256, base);
});

test('a three-backtick line does not close a four-backtick fence', () => {
  const text = '## S\n````\n```\n### Hidden\n````\n### Visible\nbody\n';
  assert.deepEqual(parseCatalog(text, 'f.md').invariants.map((i) => i.title), ['Visible']);
});

test('a tilde line does not close a backtick fence', () => {
  const text = '## S\n```\n~~~\n### Hidden\n```\n### Visible\n';
  assert.deepEqual(parseCatalog(text, 'f.md').invariants.map((i) => i.title), ['Visible']);
});

test('ATX details: closing hashes, indentation, and non-headings', () => {
  const text = '## S\n   ### Indented Three ###\n    ### Indented Four\n###NoSpace\n### Trailing # kept\n';
  assert.deepEqual(parseCatalog(text, 'f.md').invariants.map((i) => i.title), ['Indented Three', 'Trailing # kept']);
});

test('a catalog that is not UTF-8 is an input error naming the line', () => {
  const file = join(scratchDir('synchro-catalog-'), 'latin1.md');
  writeFileSync(file, Buffer.concat([Buffer.from('## S\n### Fine\n'), Buffer.from([0x43, 0x61, 0x66, 0xe9, 0x0a])]));
  assert.throws(() => readCatalog(file), (error: unknown) => error instanceof InputError && error.line === 3 && /not valid UTF-8/.test(error.message));
});

test('the catalog hash is the SHA-256 of the file bytes', () => {
  const file = fixture('small-catalog.md');
  assert.equal(readCatalog(file).sha256, createHash('sha256').update(readFileSync(file)).digest('hex'));
});

test('unclosed front matter and unreadable files are input errors naming the file', () => {
  assert.throws(() => parseCatalog('---\ntitle: x\n## S\n', 'open.mdx'), (error: unknown) => error instanceof InputError && error.file === 'open.mdx' && error.line === 1);
  assert.throws(() => readCatalog('/nonexistent/catalog.md'), (error: unknown) => error instanceof InputError && /cannot read/.test(error.message));
});
