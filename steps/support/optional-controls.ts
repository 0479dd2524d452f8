/**
 * Optional adapter controls. A scenario that needs a control the adapter
 * contract marks optional, and that the adapter under test does not offer,
 * cannot reach a verdict: its step is skipped with evidence naming the
 * missing control, so the report shows it undetermined, never passed.
 */
import { undeterminedEvidence } from '../../harness/report/evidence.ts';
import type { SyncWorld } from './world.ts';

export function undeterminedWithout(world: SyncWorld, reason: string): 'skipped' {
  const evidence = undeterminedEvidence(reason);
  world.attach(evidence.body, evidence.mediaType);
  return 'skipped';
}
