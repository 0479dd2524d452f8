/**
 * Test control: damages the stored migration state of a client database
 * that no client has open, as a failing disk, a buggy upgrade or a hand edit
 * would, so a conformance run can check that recovery refuses it. Never used
 * by the client itself.
 */
import Database from 'better-sqlite3';
import { quoteIdent as q } from '../local/manifest.ts';
import { type MigrationPlan, planHash } from './plan.ts';

export interface Tamper {
  defect: 'target_body_byte' | 'plan_step_changed' | 'source_version' | 'unknown_phase' | 'target_removed' | 'raw_sql_step' | 'physical_column';
  sourceVersion?: number;
  sql?: string;
  table?: string;
  column?: string;
  sqlType?: string;
}

/** Applies `tamper` to the database file at `path`; returns what it changed. */
export function tamperMigration(path: string, tamper: Tamper): string {
  const db = new Database(path, { fileMustExist: true });
  try {
    const row = db.prepare('SELECT target_manifest_json, plan_json FROM _synchro_migration_journal WHERE id = 1').get() as { target_manifest_json: string | null; plan_json: string } | undefined;
    if (row === undefined && tamper.defect !== 'physical_column') throw new Error('the database holds no migration journal to damage');
    const setJournal = (member: string, value: unknown) => db.prepare(`UPDATE _synchro_migration_journal SET ${member} = ? WHERE id = 1`).run(value);
    const plan = () => JSON.parse(row?.plan_json ?? '{}') as MigrationPlan & { steps: Record<string, unknown>[] };
    switch (tamper.defect) {
      case 'target_body_byte': {
        const body = row?.target_manifest_json ?? '';
        // One letter inside the first field name: still a well-formed manifest, no longer the one its hash names.
        const at = body.indexOf('"name":"') + '"name":"'.length;
        if (at < '"name":"'.length) throw new Error('the stored target manifest has no field name to change');
        setJournal('target_manifest_json', `${body.slice(0, at)}${body[at] === 'x' ? 'y' : 'x'}${body.slice(at + 1)}`);
        return `the first field name of the stored target manifest now starts with another letter`;
      }
      case 'plan_step_changed': {
        const p = plan();
        const step = p.steps.find((s) => s.kind === 'add_column') ?? p.steps[0];
        if (step === undefined) throw new Error('the stored plan has no step to change');
        if (step.kind === 'add_column') step.sqlType = step.sqlType === 'TEXT' ? 'INTEGER' : 'TEXT';
        else step.table = `${String(step.table)}_other`;
        setJournal('plan_json', JSON.stringify(p));
        return `plan step ${JSON.stringify(step)} changed; the stored plan hash kept`;
      }
      case 'source_version':
        setJournal('source_version', tamper.sourceVersion ?? 99);
        return `source reference version set to ${tamper.sourceVersion ?? 99}`;
      case 'unknown_phase':
        setJournal('phase', 'half_applied');
        return 'phase set to "half_applied"';
      case 'target_removed':
        setJournal('target_manifest_json', null);
        return 'stored target manifest removed';
      case 'raw_sql_step': {
        const p = plan();
        p.steps.push({ kind: 'sql', sql: tamper.sql ?? '' });
        // The hash is recomputed: only the typed-step check can refuse this plan.
        db.transaction(() => {
          setJournal('plan_json', JSON.stringify(p));
          setJournal('plan_hash', planHash(p));
        })();
        return `raw SQL step ${JSON.stringify(tamper.sql)} appended, plan hash recomputed`;
      }
      case 'physical_column':
        db.exec(`ALTER TABLE ${q(tamper.table ?? '')} ADD COLUMN ${q(tamper.column ?? '')} ${tamper.sqlType ?? 'TEXT'}`);
        return `column ${tamper.column} ${tamper.sqlType} added to table ${tamper.table}`;
    }
  } finally {
    db.close();
  }
}
