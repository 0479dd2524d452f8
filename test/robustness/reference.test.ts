/**
 * The robustness profile against the reference server, through the same
 * adapter path as `synchro-conformance fuzz`: the fixed reference gives no
 * finding, and with the fault switch of each fix (issue #20, defects 1 to 6)
 * turned back off the profile finds that defect, as the kind of finding and
 * in the part the issue describes. Seeds are fixed so each run sends the
 * same requests; sizes are small enough for `npm test` (the robustness stage
 * of `npm test` runs the full size against the fixed reference).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runAgainst } from '../../harness/robustness/command.ts';
import type { ProfileOptions } from '../../harness/robustness/profile.ts';
import type { FindingClass, Part, ProfileReport } from '../../harness/robustness/types.ts';
import { ENDPOINTS } from '../../harness/robustness/types.ts';

const QUICK: Pick<ProfileOptions, 'runs' | 'seed' | 'hangMs' | 'slowClients' | 'shrinkMs' | 'quotedRows'> = { runs: 300, seed: 20, hangMs: 30_000, slowClients: 0, shrinkMs: 3_000 };

const found = (report: ProfileReport) => report.parts.flatMap((p) => p.findings.map((f) => `${f.class} in ${f.part}`)).sort();

/** Runs the profile with one switch on and checks it finds `expected` (each `class in part`) and nothing of another class. */
async function detects(fault: string, parts: readonly Part[], expected: string[], classes: FindingClass[], extra: Partial<typeof QUICK> = {}): Promise<ProfileReport> {
  const report = await runAgainst('reference', [fault], { ...QUICK, ...extra, parts });
  const all = found(report);
  for (const want of expected) assert.ok(all.includes(want), `with ${fault} the profile should find ${want}; it found ${all.join(', ') || 'nothing'}`);
  for (const finding of report.parts.flatMap((p) => p.findings)) assert.ok(classes.includes(finding.class), `with ${fault} the profile also found ${finding.class} in ${finding.part}: ${finding.minimal.request}`);
  return report;
}

test('the fixed reference gives no finding: no 5xx, no hang, no answer without the envelope, no state change', async () => {
  const report = await runAgainst('reference', [], { ...QUICK, slowClients: 16 });
  assert.deepEqual(found(report), []);
  assert.equal(report.state.method, 'inspect');
  assert.ok(report.state.comparisons > 0 && report.state.requestsCompared > report.sent / 2, JSON.stringify(report.state));
  for (const part of report.parts) assert.ok(part.sent > 0, `${part.part} sent nothing`);
  assert.deepEqual(report.parts.flatMap((p) => p.notRun), [], 'the reference adapter lets every probe run');
});

test('defect 1: with U+0000 reaching the database, the profile finds 500s on every endpoint and for the user claim', async () => {
  const report = await detects('server:accept-nul', [...ENDPOINTS, 'tokens'], ['server-error in connect', 'server-error in tokens'], ['server-error']);
  const connect = report.parts.find((p) => p.part === 'connect')?.findings[0];
  assert.match(connect?.minimal.request ?? '', /U\+0000|\\u0000/);
});

test('defect 2: without the length limits, the profile finds 500s for long identifiers and keys', async () => {
  const report = await detects('server:no-input-limits', ['connect', 'tokens'], ['server-error in connect', 'server-error in tokens'], ['server-error']);
  const connect = report.parts.find((p) => p.part === 'connect')?.findings[0];
  assert.match(connect?.minimal.request ?? '', /\d+ (random|multi-octet) characters/);
  // A long key is one slot among many in a push body, so it needs the stage's size
  // (2,000 per endpoint) to be drawn at a length past the index entry limit.
  const push = await detects('server:no-input-limits', ['push'], ['server-error in push'], ['server-error'], { runs: 2_000 });
  assert.match(push.parts[0]?.findings[0]?.minimal.request ?? '', /\/mutations\/\d+\/pk\/\S+ = \d+ (random|multi-octet) characters/);
});

test('defect 3: accepting a user claim that is not exact text, the profile finds the lone-surrogate user accepted', async () => {
  const report = await detects('server:accept-lone-surrogate-sub', ['tokens'], ['accepted in tokens'], ['accepted', 'server-error']);
  const accepted = report.parts[0]?.findings.find((f) => f.class === 'accepted');
  assert.match(accepted?.minimal.request ?? '', /lone (high|low) surrogate/);
});

test("defect 4: with Node's bare answers, the profile finds answers without the envelope", async () => {
  await detects('server:bare-http-errors', ['transport'], ['bad-envelope in transport'], ['bad-envelope']);
});

test('defect 5: without body timeout and connection cap, the profile finds stalled requests held past the hang bound', async () => {
  const report = await detects('server:no-slow-client-limits', ['slow-clients'], ['hang in slow-clients'], ['hang'], { slowClients: 16, hangMs: 15_000 });
  assert.equal(report.parts[0]?.findings[0]?.count, 16);
});

test('defect 6: accepting tokens without exp or issued ahead, and bodies with a content coding, the profile finds them accepted', async () => {
  const tokens = await detects('server:lax-token-claims', ['tokens'], ['accepted in tokens'], ['accepted']);
  assert.match(tokens.parts[0]?.findings[0]?.minimal.request ?? '', /no exp|iat a year ahead/);
  await detects('server:accept-content-encoding', ENDPOINTS, ENDPOINTS.map((e) => `accepted in ${e}`), ['accepted']);
});

test('a refusal that writes: with a generation refusal that claims its batch first, the profile finds the state change, by rows and by digest', async () => {
  for (const quotedRows of [undefined, 0]) {
    const report = await detects('server:schema005-generation-refusal-ledgered', ['push'], ['state-change in push'], ['state-change'], { quotedRows });
    const change = report.parts[0]?.findings.find((f) => f.class === 'state-change');
    assert.match(change?.minimal.detail ?? '', quotedRows === 0 ? /synchro\.push_batches: before .* \/ after \d+ rows, digest/ : /synchro\.push_batches: before \[/);
  }
});
