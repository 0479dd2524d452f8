/**
 * The provenance edges a client reports (which scope justifies which local
 * row), read through the client adapter's inspection.
 */
import type { SyncWorld } from '../world.ts';

export interface ProvenanceEdge {
  scopeId: string;
  /** The table's wire id. */
  table: string;
  recordId: string;
}

export async function provenanceOf(world: SyncWorld, name: string): Promise<ProvenanceEdge[]> {
  const { provenance } = await (await world.process(name)).call<{ provenance: ProvenanceEdge[] }>('inspectProvenance');
  return provenance;
}

export const edgeText = (scope: string, tableId: string, recordId: string) => `${scope} ${tableId} ${recordId}`;
