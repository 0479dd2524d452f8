import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { compareSemVer, compareVersions, isSemVer, meetsMinimum, parseSemVer } from '../../harness/codec/semver.ts';

// The grammar as semver.org publishes it (ASCII classes, anchored), an independent statement of validity.
const SEMVER_ORG =
  /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$/;

/** A second, deliberately different ordering: BigInt cores, tuple-wise identifiers. */
function modelCompare(a: string, b: string): number {
  const split = (v: string) => {
    const noBuild = v.split('+')[0] as string;
    const i = noBuild.indexOf('-');
    const core = (i === -1 ? noBuild : noBuild.slice(0, i)).split('.').map((n) => BigInt(n));
    const pre = i === -1 ? [] : noBuild.slice(i + 1).split('.');
    return { core, pre };
  };
  const x = split(a);
  const y = split(b);
  for (let k = 0; k < 3; k++) {
    const p = x.core[k] as bigint;
    const q = y.core[k] as bigint;
    if (p !== q) return p < q ? -1 : 1;
  }
  if (x.pre.length === 0 && y.pre.length === 0) return 0;
  if (x.pre.length === 0) return 1;
  if (y.pre.length === 0) return -1;
  for (let k = 0; k < Math.max(x.pre.length, y.pre.length); k++) {
    const p = x.pre[k];
    const q = y.pre[k];
    if (p === undefined) return -1;
    if (q === undefined) return 1;
    const pn = /^\d+$/.test(p);
    const qn = /^\d+$/.test(q);
    if (pn && qn) {
      const d = BigInt(p) - BigInt(q);
      if (d !== 0n) return d < 0n ? -1 : 1;
    } else if (pn !== qn) {
      return pn ? -1 : 1;
    } else if (p !== q) {
      return Buffer.compare(Buffer.from(p, 'ascii'), Buffer.from(q, 'ascii'));
    }
  }
  return 0;
}

const numberPart = fc.oneof(fc.constantFrom('0', '1', '2', '3', '9', '10', '11'), fc.bigInt({ min: 0n, max: 2n ** 70n }).map(String));
const alnum = fc.stringMatching(/^[0-9A-Za-z-]{1,6}$/);
const preId = fc.oneof(numberPart, alnum.filter((s) => !/^\d+$/.test(s)));
const buildId = alnum;
const semverArb = fc
  .record({
    core: fc.tuple(numberPart, numberPart, numberPart),
    pre: fc.array(preId, { maxLength: 4 }),
    build: fc.array(buildId, { maxLength: 3 }),
  })
  .map(({ core, pre, build }) => `${core.join('.')}${pre.length > 0 ? `-${pre.join('.')}` : ''}${build.length > 0 ? `+${build.join('.')}` : ''}`);

describe('SemVer 2.0.0 grammar', () => {
  it('accepts the well-formed examples', () => {
    for (const v of ['0.0.0', '1.2.3', '1.2.3-0a', '1.2.3+001', '1.2.3-alpha-1', '1.2.3-0', '1.2.3--', '1.0.0-alpha.beta+exp.sha.5114f85', '18446744073709551616.0.0']) {
      assert.ok(isSemVer(v), v);
    }
  });

  it('refuses the malformed examples', () => {
    for (const v of ['v1.2.3', 'V1.2.3', '1.2', '1.2.3.4', '01.2.3', '1.02.3', '1.2.03', '1.2.3-01', '1.2.3-', '1.2.3+', '1.2.3-a..b', '1.2.3+a..b', ' 1.2.3', '1.2.3 ', '-1.2.3', '+1.2.3', '1.2.3-\u00e9', '1.2.3+\u00e9', '', '1.2.3\n', '1.2.3-a+b+c', '１.2.3']) {
      assert.equal(isSemVer(v), false, JSON.stringify(v));
    }
    assert.equal(isSemVer(123), false);
    assert.equal(isSemVer(null), false);
  });

  it('keeps the parts apart', () => {
    assert.deepEqual(parseSemVer('1.0.0-alpha.beta+exp.sha.5114f85'), { core: ['1', '0', '0'], prerelease: ['alpha', 'beta'], build: ['exp', 'sha', '5114f85'] });
  });

  it('agrees with the semver.org expression on generated strings', () => {
    const text = fc.stringMatching(/^[0-9a-z.+\- vV]{0,14}$/);
    fc.assert(
      fc.property(fc.oneof(text, semverArb), (s) => {
        assert.equal(isSemVer(s), SEMVER_ORG.test(s), JSON.stringify(s));
      }),
      { numRuns: 3000 },
    );
  });
});

describe('SemVer 2.0.0 precedence', () => {
  it('orders the specification chain strictly increasing', () => {
    const chain = ['1.0.0-alpha', '1.0.0-alpha.1', '1.0.0-alpha.beta', '1.0.0-beta', '1.0.0-beta.2', '1.0.0-beta.11', '1.0.0-rc.1', '1.0.0'];
    for (let i = 0; i < chain.length; i++) {
      for (let j = 0; j < chain.length; j++) assert.equal(compareVersions(chain[i] as string, chain[j] as string), Math.sign(i - j), `${chain[i]} vs ${chain[j]}`);
    }
  });

  it('decides the listed pairs', () => {
    assert.equal(compareVersions('1.2.3-beta', '1.2.3'), -1);
    assert.equal(compareVersions('1.2.3+one', '1.2.3+two'), 0);
    assert.equal(compareVersions('1.2.3-10', '1.2.3-9'), 1);
    assert.equal(compareVersions('1.2.3-a', '1.2.3-B'), 1);
    assert.equal(compareVersions('1.2.3-alpha', '1.2.3-1'), 1);
    assert.equal(compareVersions('18446744073709551616.0.0', '18446744073709551615.0.0'), 1);
    assert.equal(compareVersions('1.10.0', '1.9.0'), 1);
  });

  it('refuses to compare a malformed version', () => {
    assert.throws(() => compareVersions('v1.0.0', '1.0.0'), RangeError);
  });

  it('gates by the minimum and fails closed', () => {
    assert.equal(meetsMinimum('1.0.0', '1.0.0'), true);
    assert.equal(meetsMinimum('1.0.0-rc.1', '1.0.0'), false);
    assert.equal(meetsMinimum('1.2.3+999', '1.2.3'), true);
    assert.equal(meetsMinimum('v9.0.0', '1.0.0'), false);
    assert.equal(meetsMinimum('9.0.0', '1.0'), false);
  });

  it('matches an independent BigInt model on generated pairs', () => {
    fc.assert(
      fc.property(semverArb, semverArb, (a, b) => {
        assert.equal(compareVersions(a, b), modelCompare(a, b), `${a} vs ${b}`);
      }),
      { numRuns: 3000 },
    );
  });

  it('is a total preorder that ignores build metadata', () => {
    fc.assert(
      fc.property(semverArb, semverArb, semverArb, (a, b, c) => {
        const [pa, pb, pc] = [a, b, c].map((v) => parseSemVer(v)) as [NonNullable<ReturnType<typeof parseSemVer>>, NonNullable<ReturnType<typeof parseSemVer>>, NonNullable<ReturnType<typeof parseSemVer>>];
        assert.equal(Math.sign(compareSemVer(pa, pb)), -Math.sign(compareSemVer(pb, pa)));
        if (compareSemVer(pa, pb) <= 0 && compareSemVer(pb, pc) <= 0) assert.ok(compareSemVer(pa, pc) <= 0);
        assert.equal(compareSemVer(pa, { ...pa, build: ['x'] }), 0);
      }),
      { numRuns: 2000 },
    );
  });
});
