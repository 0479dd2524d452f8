/** A throwaway project (catalog, invariants.yaml, features) for mapping-check tests. */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { scratchDir } from '../support/scratch-dir.ts';

export const FIXTURE_CATALOG = new URL('./fixtures/small-catalog.md', import.meta.url).pathname;

export interface FixtureRecord {
  id: string;
  title: string;
  anchor: string;
  section: string;
  applies_to?: string[];
  feature?: string;
  normative?: string[];
}

export const RECORDS: FixtureRecord[] = [
  { id: 'SYNC-ALPHA-001', title: 'First Rule', anchor: 'first-rule', section: 'Alpha Invariants' },
  { id: 'SYNC-ALPHA-002', title: 'Second Rule', anchor: 'second-rule', section: 'Alpha Invariants' },
  { id: 'SYNC-BETA-001', title: 'Third Rule', anchor: 'third-rule', section: 'Beta Invariants' },
];

export function recordsYaml(records: FixtureRecord[], catalog = FIXTURE_CATALOG): string {
  const lines = [`catalog: ${catalog}`, 'requirements:'];
  for (const r of records) {
    const applies = r.applies_to ?? ['server'];
    lines.push(
      `  - id: ${r.id}`,
      `    title: ${r.title}`,
      `    anchor: ${r.anchor}`,
      `    section: ${r.section}`,
      '    summary: A summary sentence written for the test.',
      `    applies_to: [${applies.join(', ')}]`,
      `    profiles: [${[...applies, 'full'].join(', ')}]`,
      `    feature: ${r.feature ?? `features/${r.anchor}.feature`}`,
      '    references:',
      ...(r.normative ?? [r.anchor]).map((anchor) => `      - { type: normative, anchor: ${anchor} }`),
      '      - { type: supplemental, source: ADR 002, section: Exact replay }',
    );
  }
  return `${lines.join('\n')}\n`;
}

export function featureText(id: string, title: string, tags = '@server'): string {
  return `@${id} ${tags}\nFeature: ${title}\n\n  Scenario: something observable\n    Given a step nobody defined\n`;
}

/** Writes the fixture project and returns its root. */
export function makeProject(options: { records?: FixtureRecord[]; yaml?: string; features?: Record<string, string> } = {}): string {
  const root = scratchDir('synchro-catalog-');
  const records = options.records ?? RECORDS;
  writeFileSync(join(root, 'invariants.yaml'), options.yaml ?? recordsYaml(records));
  const features = options.features ?? Object.fromEntries(RECORDS.map((r) => [`features/${r.anchor}.feature`, featureText(r.id, r.title)]));
  for (const [path, text] of Object.entries(features)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return root;
}

export function catalogText(): string {
  return readFileSync(FIXTURE_CATALOG, 'utf8');
}
