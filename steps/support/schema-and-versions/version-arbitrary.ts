/**
 * Generated application versions for the minimum-client gate: well-formed
 * SemVer 2.0.0 strings clustered around a core so that ties, neighbours and
 * prerelease orderings come up often, with prerelease lists mixing numeric and
 * ASCII word identifiers and optional build metadata.
 */
import fc from 'fast-check';

function near(n: bigint): fc.Arbitrary<string> {
  const low = n > 0n ? n - 1n : 0n;
  return fc.oneof({ weight: 4, arbitrary: fc.constant(String(n)) }, { weight: 2, arbitrary: fc.constantFrom(String(low), String(n + 1n)) }, { weight: 1, arbitrary: fc.bigInt({ min: 0n, max: 2n ** 66n }).map(String) });
}

const numeric = fc.oneof(fc.constantFrom('0', '1', '2', '9', '10', '11'), fc.nat({ max: 200 }).map(String));

const word = fc.oneof(fc.constantFrom('rc', 'RC', 'alpha', 'beta', 'rc-1', 'a', 'Z', '-', '0a', 'rc2'), fc.stringMatching(/^[A-Za-z-][0-9A-Za-z-]{0,4}$/));

const build = fc.array(fc.stringMatching(/^[0-9A-Za-z-]{1,5}$/), { minLength: 1, maxLength: 2 });

/** Versions around `major.minor.patch`, prerelease lists of up to `maxIdentifiers` identifiers. */
export function versionsNear(core: [bigint, bigint, bigint], maxIdentifiers: number): fc.Arbitrary<string> {
  const prerelease = fc.oneof(
    { weight: 2, arbitrary: fc.constant<string[]>([]) },
    { weight: 5, arbitrary: fc.array(fc.oneof(numeric, word), { minLength: 1, maxLength: maxIdentifiers }) },
    { weight: 2, arbitrary: fc.tuple(fc.constantFrom('rc', 'RC', 'rc-', 'rd'), fc.option(numeric, { nil: undefined })).map(([w, n]) => (n === undefined ? [w] : [w, n])) },
  );
  return fc
    .record({ major: near(core[0]), minor: near(core[1]), patch: near(core[2]), prerelease, build: fc.option(build, { nil: undefined }) })
    .map(({ major, minor, patch, prerelease: pre, build: b }) => `${major}.${minor}.${patch}${pre.length > 0 ? `-${pre.join('.')}` : ''}${b === undefined ? '' : `+${b.join('.')}`}`);
}
