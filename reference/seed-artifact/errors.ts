/**
 * How the artifact builder refuses: one error type naming the check that
 * failed, so an operator (and a test) can tell which rule stopped the
 * publication. A refusal always means no artifact was published.
 */
export type SeedCheck =
  | 'manifest hash'
  | 'portable scope set'
  | 'page sequence'
  | 'row version'
  | 'row digest'
  | 'row identity order'
  | 'cardinality and digest'
  | 'receipt'
  | 'queue and provenance'
  | 'sqlite integrity'
  | 'sidecar'
  | 'artifact hash'
  | 'verification not finished'
  | 'input';

export class SeedArtifactError extends Error {
  readonly check: SeedCheck;

  constructor(check: SeedCheck, message: string) {
    super(`seed artifact refused by the ${check} check: ${message}`);
    this.name = 'SeedArtifactError';
    this.check = check;
  }
}
