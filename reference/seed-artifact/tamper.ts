/**
 * The export-side fault injection points: each changes what was read from
 * the export the way a faulty exporter or a damaged transfer would, before
 * any check runs. One marked line per fault.
 */
import type { ExportRun } from './export-run.ts';
import type { FaultSwitch } from './faults.ts';

function recodePayload(token: string, edit: (payload: Record<string, unknown>) => void): string {
  const [prefix, p64, mac] = token.split('.') as [string, string, string];
  const payload = JSON.parse(Buffer.from(p64, 'base64url').toString('utf8')) as Record<string, unknown>;
  edit(payload);
  // The MAC is kept: the builder holds no key, so only the members can give the edit away.
  return `${prefix}.${Buffer.from(JSON.stringify(payload), 'utf8').toString('base64url')}.${mac}`;
}

export function tamper(run: ExportRun, fault: FaultSwitch): void {
  const entry = run.manifest.portable_scopes[0];
  if (entry === undefined) return;
  const list = run.pages[entry.id] ?? [];
  const firstRecord = list[0]?.page.records[0];
  const lastPage = list.at(-1)?.page;
  if (fault('drop-row') && lastPage !== undefined) lastPage.records.pop(); // fault: seed:drop-row
  if (fault('alter-value') && firstRecord !== undefined) {
    const pkField = Object.keys(firstRecord.pk)[0];
    const field = Object.keys(firstRecord.row).find((f) => f !== pkField && typeof firstRecord.row[f] === 'string');
    if (field !== undefined) firstRecord.row[field] = `${String(firstRecord.row[field])} (altered)`; // fault: seed:alter-value
  }
  if (fault('drop-server-version') && firstRecord !== undefined) delete (firstRecord as Partial<typeof firstRecord>).server_version; // fault: seed:drop-server-version
  if (fault('alter-server-version') && firstRecord !== undefined) firstRecord.server_version = `${firstRecord.server_version}0`; // fault: seed:alter-server-version
  if (fault('alter-row-checksum') && firstRecord !== undefined) {
    const c = firstRecord.row_checksum as { digest: string };
    firstRecord.row_checksum = { ...c, digest: `${c.digest[0] === '0' ? '1' : '0'}${c.digest.slice(1)}` }; // fault: seed:alter-row-checksum
  }
  if (fault('skip-second-page') && list.length > 1) list.splice(1, 1); // fault: seed:skip-second-page
  if (fault('repeat-first-page') && list[0] !== undefined) list.splice(1, 0, list[0]); // fault: seed:repeat-first-page
  if (fault('alter-receipt-cardinality')) entry.continuation = recodePayload(entry.continuation, (p) => { p.cardinality = String(Number(p.cardinality) + 1); }); // fault: seed:alter-receipt-cardinality
  if (fault('alter-manifest-body')) {
    const tables = (run.schemaManifest as { tables: { name: string }[] }).tables;
    if (tables[0] !== undefined) tables[0].name = `${tables[0].name}_altered`; // fault: seed:alter-manifest-body
  }
}
