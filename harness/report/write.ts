/**
 * Produces the three report files of a run from its message stream.
 *
 * Everything is rendered in memory first; the files are then written to
 * temporary names and renamed into place, so an error (bad input, a report
 * that breaks its schema, a full disk) leaves the previous reports untouched
 * instead of a mix of old and half-written new ones.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RequirementRecord } from '../catalog/types.ts';
import { InputError } from '../errors.ts';
import { classifyRun, STATUSES } from './classify.ts';
import type { ConformanceReport, ImplementationInfo, SensitivityResult } from './conformance-json.ts';
import { buildReport, renderReportJson } from './conformance-json.ts';
import { renderHtml } from './html.ts';
import { renderJunit } from './junit.ts';
import { readMessages } from './messages.ts';

export const REPORT_FILES = {
  json: 'conformance.json',
  html: 'conformance.html',
  junit: 'junit.xml',
} as const;

export interface WriteReportsOptions {
  messagesFile: string;
  records: readonly RequirementRecord[];
  catalogFile: string;
  implementation: ImplementationInfo;
  vectorSetHash?: string | undefined;
  sensitivity?: SensitivityResult | undefined;
  outDir: string;
  /** Fixed in tests; the current time otherwise. */
  generatedAt?: Date;
}

export function catalogSha256(file: string): string {
  let bytes: Buffer;
  try {
    bytes = readFileSync(file);
  } catch (error) {
    throw new InputError(file, undefined, `cannot read the catalog (${(error as Error).message})`, 'give the path of the invariant catalog markdown with --catalog');
  }
  return createHash('sha256').update(bytes).digest('hex');
}

export function buildReportFromFiles(options: Omit<WriteReportsOptions, 'outDir'>): ConformanceReport {
  const index = readMessages(options.messagesFile);
  const classification = classifyRun(index, options.records);
  return buildReport({
    classification,
    index,
    catalog: { path: options.catalogFile, sha256: catalogSha256(options.catalogFile) },
    implementation: options.implementation,
    vectorSetHash: options.vectorSetHash,
    sensitivity: options.sensitivity,
    ...(options.generatedAt ? { generatedAt: options.generatedAt } : {}),
  });
}

/** Where each report object was written, so the summary can name the files without a second argument. */
const writtenTo = new WeakMap<ConformanceReport, string>();

export function writeReports(options: WriteReportsOptions): ConformanceReport {
  const report = buildReportFromFiles(options);
  const contents: [string, string][] = [
    [REPORT_FILES.json, renderReportJson(report)],
    [REPORT_FILES.html, renderHtml(report)],
    [REPORT_FILES.junit, renderJunit(report)],
  ];
  writeAllOrNothing(options.outDir, contents);
  writtenTo.set(report, options.outDir);
  return report;
}


/** Writes every file to a temporary name, then renames them all; on error removes the temporaries. */
export function writeAllOrNothing(dir: string, files: readonly [string, string][]): void {
  mkdirSync(dir, { recursive: true });
  const suffix = `.tmp-${process.pid}-${Date.now()}`;
  const temporaries: string[] = [];
  try {
    for (const [name, text] of files) {
      const temporary = join(dir, name + suffix);
      temporaries.push(temporary);
      writeFileSync(temporary, text);
    }
  } catch (error) {
    for (const temporary of temporaries) rmSync(temporary, { force: true });
    throw error;
  }
  for (const [name] of files) renameSync(join(dir, name + suffix), join(dir, name));
}

/** The lines printed at the end of a run: counts per status, a table per section, where the reports are. */
export function formatSummary(report: ConformanceReport, outDir = writtenTo.get(report)): string {
  const overall = report.summary.overall;
  const lines: string[] = [];
  const left = report.not_selected?.length ?? 0;
  const selection = left === 0 ? '' : ` selected; ${left} not selected by --tags or --profile`;
  lines.push(`Requirements: ${overall.total}${selection} (${STATUSES.map((s) => `${overall[s]} ${s}`).join(', ')})`);
  const rows = report.summary.by_section.map((s) => [s.section, s.counts.total, ...STATUSES.map((st) => s.counts[st])]);
  const header = ['Section', 'total', ...STATUSES];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
  const format = (cells: readonly (string | number)[]) =>
    cells.map((c, i) => (i === 0 ? String(c).padEnd(widths[i] ?? 0) : String(c).padStart(widths[i] ?? 0))).join('  ');
  lines.push('', format(header), format(widths.map((w) => '-'.repeat(w))), ...rows.map(format));
  if (report.problems.length > 0) lines.push('');
  for (const problem of report.problems) {
    const where = problem.uri === null ? '' : `${problem.uri}${problem.line === null ? '' : `:${problem.line}`}: `;
    lines.push(`problem: ${where}${problem.message}`);
  }
  if (outDir !== undefined) {
    lines.push('', 'Reports:', ...Object.values(REPORT_FILES).map((f) => `  ${join(outDir, f)}`));
  }
  return lines.join('\n');
}
