/**
 * What a catalog change does to the requirements: `catalog diff <old> <new>`.
 *
 * Invariants are matched by anchor first. A heading that disappeared while a
 * new heading with the same body appeared is a rename; the same anchor with a
 * different body is a change of substance; the same heading under another
 * section is a move. Each entry names the records and features that the
 * change affects, so a spec author sees at once which tests to revisit.
 */
import type { Catalog, Invariant } from './parse.ts';
import type { RequirementRecord } from './types.ts';

export type ChangeKind = 'added' | 'removed' | 'renamed' | 'changed' | 'moved';

export interface AffectedRecord {
  id: string;
  feature: string;
}

export interface CatalogChange {
  kind: ChangeKind;
  /** Title in the new catalog (or in the old one for a removal). */
  title: string;
  oldTitle?: string;
  anchor: string;
  oldAnchor?: string;
  section: string | undefined;
  oldSection?: string | undefined;
  oldSha256?: string;
  newSha256?: string;
  affects: AffectedRecord[];
}

export interface CatalogDiff {
  old: { file: string; sha256: string; invariants: number };
  new: { file: string; sha256: string; invariants: number };
  changes: CatalogChange[];
}

export function diffCatalogs(before: Catalog, after: Catalog, records: RequirementRecord[]): CatalogDiff {
  const affects = (anchor: string): AffectedRecord[] =>
    records.filter((record) => record.anchor === anchor).map((record) => ({ id: record.id, feature: record.feature }));
  const oldByAnchor = new Map(before.invariants.map((invariant) => [invariant.anchor, invariant]));
  const newByAnchor = new Map(after.invariants.map((invariant) => [invariant.anchor, invariant]));
  const changes: CatalogChange[] = [];

  const removed = before.invariants.filter((invariant) => !newByAnchor.has(invariant.anchor));
  const added = after.invariants.filter((invariant) => !oldByAnchor.has(invariant.anchor));
  // A rename keeps the body: pair each removed heading with an added one of the same body hash.
  const addedByBody = new Map<string, Invariant[]>();
  for (const invariant of added) addedByBody.set(invariant.bodySha256, [...(addedByBody.get(invariant.bodySha256) ?? []), invariant]);
  const renamedTo = new Set<Invariant>();

  for (const old of removed) {
    const target = addedByBody.get(old.bodySha256)?.find((candidate) => !renamedTo.has(candidate));
    if (target) {
      renamedTo.add(target);
      changes.push({ kind: 'renamed', title: target.title, oldTitle: old.title, anchor: target.anchor, oldAnchor: old.anchor, section: target.section, oldSection: old.section, affects: affects(old.anchor) });
    } else {
      changes.push({ kind: 'removed', title: old.title, anchor: old.anchor, section: old.section, oldSha256: old.bodySha256, affects: affects(old.anchor) });
    }
  }
  for (const invariant of added) {
    if (!renamedTo.has(invariant)) {
      changes.push({ kind: 'added', title: invariant.title, anchor: invariant.anchor, section: invariant.section, newSha256: invariant.bodySha256, affects: [] });
    }
  }
  for (const invariant of after.invariants) {
    const old = oldByAnchor.get(invariant.anchor);
    if (!old) continue;
    if (old.bodySha256 !== invariant.bodySha256) {
      changes.push({ kind: 'changed', title: invariant.title, anchor: invariant.anchor, section: invariant.section, oldSha256: old.bodySha256, newSha256: invariant.bodySha256, affects: affects(invariant.anchor) });
    }
    if (old.section !== invariant.section) {
      changes.push({ kind: 'moved', title: invariant.title, anchor: invariant.anchor, section: invariant.section, oldSection: old.section, affects: affects(invariant.anchor) });
    }
  }

  return {
    old: { file: before.file, sha256: before.sha256, invariants: before.invariants.length },
    new: { file: after.file, sha256: after.sha256, invariants: after.invariants.length },
    changes,
  };
}

export function formatDiff(diff: CatalogDiff): string {
  const lines = [`old: ${diff.old.file} (${diff.old.invariants} invariants, sha256 ${diff.old.sha256})`, `new: ${diff.new.file} (${diff.new.invariants} invariants, sha256 ${diff.new.sha256})`];
  if (diff.changes.length === 0) lines.push('no invariant added, removed, renamed, changed or moved');
  for (const change of diff.changes) {
    const affected = change.affects.length === 0 ? 'no record yet' : change.affects.map((a) => `${a.id} (${a.feature})`).join(', ');
    const detail =
      change.kind === 'renamed'
        ? `"${change.oldTitle}" -> "${change.title}"`
        : change.kind === 'moved'
          ? `"${change.title}" from "${change.oldSection}" to "${change.section}"`
          : `"${change.title}"`;
    lines.push(`${change.kind.padEnd(8)} ${detail}  affects: ${affected}`);
  }
  const counts = (['added', 'removed', 'renamed', 'changed', 'moved'] as const).map((kind) => `${diff.changes.filter((c) => c.kind === kind).length} ${kind}`);
  lines.push(counts.join(', '));
  return lines.join('\n');
}
