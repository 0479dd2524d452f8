/**
 * The mapping check: catalog heading → invariants.yaml record → feature file.
 *
 * Every level-three heading must have exactly one record, every record must
 * point at exactly one level-three heading through exactly one normative
 * reference, and every record's feature must exist and be tagged with exactly
 * that record's id. All counts come from the files themselves.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { FeatureRead } from './features.ts';
import { REQUIREMENT_TAG } from './features.ts';
import type { Catalog } from './parse.ts';
import type { LocatedRecord } from './types.ts';

export type FindingCode =
  | 'orphaned-heading'
  | 'non-invariant'
  | 'duplicate-record'
  | 'duplicate-id'
  | 'normative-reference-count'
  | 'normative-reference-mismatch'
  | 'title-mismatch'
  | 'section-mismatch'
  | 'missing-feature'
  | 'unparsable-feature'
  | 'feature-id-tag'
  | 'feature-unknown-id'
  | 'feature-without-record'
  | 'feature-applicability-tags'
  | 'fault-unknown-rule'
  | 'count-mismatch';

export interface Finding {
  code: FindingCode;
  file: string;
  line: number | undefined;
  message: string;
  fix: string;
}

export interface CheckInput {
  catalog: Catalog;
  recordsFile: string;
  records: LocatedRecord[];
  /** Project root that feature paths are relative to. */
  root: string;
  /** Parsed feature files found under features/, by relative path. */
  features: Map<string, FeatureRead>;
}

export interface CheckResult {
  findings: Finding[];
  headings: number;
  records: number;
  /** Headings bound to exactly one record whose feature passed every check. */
  mapped: number;
  features: number;
}

export function checkMapping(input: CheckInput): CheckResult {
  const { catalog, recordsFile, records } = input;
  const findings: Finding[] = [];
  const add = (code: FindingCode, file: string, line: number | undefined, message: string, fix: string): void => {
    findings.push({ code, file, line, message, fix });
  };

  const headingsByAnchor = new Map(catalog.headings.map((heading) => [heading.anchor, heading]));
  const invariantsByAnchor = new Map(catalog.invariants.map((invariant) => [invariant.anchor, invariant]));
  const recordsByAnchor = new Map<string, LocatedRecord[]>();
  const recordsById = new Map<string, LocatedRecord[]>();
  const brokenRecords = new Set<LocatedRecord>();

  for (const located of records) {
    const { record, line } = located;
    const byId = recordsById.get(record.id) ?? [];
    byId.push(located);
    recordsById.set(record.id, byId);

    const normative = record.references.filter((reference) => reference.type === 'normative');
    if (normative.length !== 1) {
      brokenRecords.add(located);
      add('normative-reference-count', recordsFile, line, `record ${record.id} has ${normative.length} normative references`, 'give the record exactly one reference of type normative: the anchor of its catalog heading');
    } else if (normative[0]?.anchor !== record.anchor) {
      brokenRecords.add(located);
      add('normative-reference-mismatch', recordsFile, line, `record ${record.id} names anchor "${record.anchor}" but its normative reference points at "${normative[0]?.anchor}"`, 'make the normative reference anchor equal the record anchor');
    }

    const invariant = invariantsByAnchor.get(record.anchor);
    if (!invariant) {
      brokenRecords.add(located);
      const heading = headingsByAnchor.get(record.anchor);
      const what = heading ? `a level-${heading.level} heading ("${heading.text}", line ${heading.line}), not an invariant` : 'not a heading of the catalog';
      add('non-invariant', recordsFile, line, `record ${record.id} maps anchor "${record.anchor}", which is ${what}`, 'point the record at the anchor of a level-three heading, or remove the record');
      continue;
    }
    const bound = recordsByAnchor.get(record.anchor) ?? [];
    bound.push(located);
    recordsByAnchor.set(record.anchor, bound);
    if (record.title !== invariant.title) {
      brokenRecords.add(located);
      add('title-mismatch', recordsFile, line, `record ${record.id} has title "${record.title}" but the heading at ${catalog.file}:${invariant.line} reads "${invariant.title}"`, 'copy the heading text exactly into title');
    }
    if (record.section !== invariant.section) {
      brokenRecords.add(located);
      add('section-mismatch', recordsFile, line, `record ${record.id} has section "${record.section}" but the heading stands under "${invariant.section ?? '(no section)'}"`, 'set section to the level-two heading above the invariant');
    }
  }

  for (const [id, located] of recordsById) {
    if (located.length < 2) continue;
    for (const duplicate of located.slice(1)) {
      brokenRecords.add(duplicate);
      add('duplicate-id', recordsFile, duplicate.line, `id ${id} is used again (first at line ${located[0]?.line})`, 'give every record its own id');
    }
  }

  for (const invariant of catalog.invariants) {
    const bound = recordsByAnchor.get(invariant.anchor) ?? [];
    if (bound.length === 0) {
      add('orphaned-heading', catalog.file, invariant.line, `heading "${invariant.title}" (#${invariant.anchor}) has no record`, `add a record with anchor ${invariant.anchor} to ${recordsFile}`);
    }
    for (const duplicate of bound.slice(1)) {
      brokenRecords.add(duplicate);
      add('duplicate-record', recordsFile, duplicate.line, `record ${duplicate.record.id} maps heading "${invariant.title}", already mapped by ${bound[0]?.record.id} at line ${bound[0]?.line}`, 'keep one record per heading');
    }
  }

  checkFeatures(input, recordsById, brokenRecords, add);

  if (catalog.invariants.length !== records.length) {
    add('count-mismatch', recordsFile, undefined, `the catalog has ${catalog.invariants.length} level-three headings and ${recordsFile} has ${records.length} records`, 'keep exactly one record per heading');
  }

  const mapped = catalog.invariants.filter((invariant) => {
    const bound = recordsByAnchor.get(invariant.anchor) ?? [];
    return bound.length === 1 && !brokenRecords.has(bound[0] as LocatedRecord);
  }).length;
  return { findings, headings: catalog.invariants.length, records: records.length, mapped, features: input.features.size };
}

function checkFeatures(
  input: CheckInput,
  recordsById: Map<string, LocatedRecord[]>,
  brokenRecords: Set<LocatedRecord>,
  add: (code: FindingCode, file: string, line: number | undefined, message: string, fix: string) => void,
): void {
  const claimed = new Set<string>();
  for (const located of input.records) {
    const { record, line } = located;
    claimed.add(record.feature);
    const read = input.features.get(record.feature);
    if (!read) {
      brokenRecords.add(located);
      const exists = existsSync(join(input.root, record.feature));
      add('missing-feature', input.recordsFile, line, `record ${record.id} names feature ${record.feature}, which ${exists ? 'is outside features/' : 'does not exist'}`, `create ${record.feature} tagged @${record.id}, or correct the path`);
      continue;
    }
    if (!read.ok) continue; // reported once below, for every unparsable file
    const feature = read.feature;
    const idTags = feature.tags.filter((tag) => REQUIREMENT_TAG.test(tag.name));
    if (idTags.length !== 1 || idTags[0]?.name !== `@${record.id}`) {
      brokenRecords.add(located);
      const found = idTags.map((tag) => tag.name).join(' ') || 'no requirement tag';
      add('feature-id-tag', feature.path, idTags[0]?.line ?? feature.line, `feature must be tagged with exactly @${record.id} (its record at ${input.recordsFile}:${line}), found ${found}`, `tag the feature @${record.id} and nothing else of the form @SYNC-…`);
    }
    const expected = [...record.applies_to.map((who) => `@${who}`), ...(record.internal ? ['@internal'] : [])].sort();
    const actual = feature.tags.map((tag) => tag.name).filter((name) => ['@server', '@client', '@internal'].includes(name)).sort();
    if (expected.join(' ') !== actual.join(' ')) {
      brokenRecords.add(located);
      add('feature-applicability-tags', feature.path, feature.line, `feature tags ${actual.join(' ') || '(none)'} disagree with record ${record.id} (applies_to and internal give ${expected.join(' ')})`, 'make the feature tags and the record agree');
    }
    const rules = new Set(feature.rules.map((rule) => rule.title));
    for (const recipe of record.faults ?? []) {
      if (rules.has(recipe.rule)) continue;
      add('fault-unknown-rule', input.recordsFile, line, `record ${record.id}: fault ${recipe.name} targets the rule "${recipe.rule}", which ${feature.path} does not have`, `copy the title of the Rule the fault breaks exactly as the feature writes it after "Rule:"`);
    }
  }

  for (const [path, read] of input.features) {
    if (!read.ok) {
      add('unparsable-feature', path, read.error.line, `not valid Gherkin: ${read.error.message}`, 'correct the Gherkin syntax');
      continue;
    }
    for (const tag of read.feature.tags.filter((t) => REQUIREMENT_TAG.test(t.name))) {
      if (!recordsById.has(tag.name.slice(1))) {
        add('feature-unknown-id', path, tag.line, `tag ${tag.name} names no record`, 'tag the feature with the id of its record');
      }
    }
    if (!claimed.has(path)) {
      add('feature-without-record', path, read.feature.line, 'no record names this feature', 'add it to its record in invariants.yaml, or delete the file');
    }
  }
}

/** One line per finding: `file:line: [code] message. Fix: ...` */
export function formatFinding(finding: Finding): string {
  const where = finding.line === undefined ? finding.file : `${finding.file}:${finding.line}`;
  return `${where}: [${finding.code}] ${finding.message}. Fix: ${finding.fix}`;
}
