/**
 * What a robustness run prints: per part the requests sent and the answers
 * by status and code, the state comparisons, what could not be run, and each
 * finding with the smallest request that shows it and how to replay the run.
 */
import { FINDING_MEANING, type ProfileReport } from './types.ts';

const thousands = (n: number) => n.toLocaleString('en-US');

function answers(counts: Record<string, number>): string {
  return Object.entries(counts)
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .map(([tally, n]) => `${tally} ${thousands(n)}`)
    .join(' · ');
}

export function formatReport(report: ProfileReport, replay: string): string {
  const lines: string[] = [];
  lines.push(`robustness profile against ${report.server.description}`);
  lines.push(`seed ${report.seed}, ${thousands(report.runsPerEndpoint)} generated requests per endpoint, hang bound ${report.hangMs} ms${report.faults.length > 0 ? `, fault switches ${report.faults.join(', ')}` : ''}`);
  for (const note of report.setUpNotes) lines.push(`set-up: ${note}`);
  const width = Math.max(...report.parts.map((p) => p.part.length));
  for (const part of report.parts) {
    lines.push(`  ${part.part.padEnd(width)}  ${thousands(part.sent).padStart(6)} sent  ${answers(part.answers) || '(nothing sent)'}`);
    for (const note of part.notes) lines.push(`  ${' '.repeat(width)}  ${note}`);
  }
  const { state } = report;
  lines.push(
    `state (read through ${state.method === 'inspect' ? 'the inspect capability' : 'the protocol: connect and pull of client A'}): ${state.comparisons} comparison${state.comparisons === 1 ? '' : 's'} over ${thousands(state.requestsCompared)} requests` +
      (state.requestsNotCompared > 0 ? `; ${thousands(state.requestsNotCompared)} requests not compared (their chunk held an accepted request)` : ''),
  );
  const notRun = report.parts.flatMap((p) => p.notRun.map((n) => `${p.part}: ${n}`));
  if (notRun.length > 0) lines.push(`not run here: ${notRun.length} probes`, ...notRun.map((n) => `  ${n}`));
  const findings = report.parts.flatMap((p) => p.findings);
  for (const finding of findings) {
    lines.push('');
    const times = finding.class === 'state-change' || finding.class === 'not-ready' ? `${thousands(finding.count)} time${finding.count === 1 ? '' : 's'}` : `${thousands(finding.count)} request${finding.count === 1 ? '' : 's'}`;
    lines.push(`FINDING ${finding.class} in ${finding.part} (${times}): the server ${FINDING_MEANING[finding.class]}`);
    lines.push(`  minimal request (${finding.shrinking}): ${finding.minimal.request}`);
    if (finding.minimal.answer !== '') lines.push(`  answer: ${finding.minimal.answer}`);
    lines.push(`  why: ${finding.minimal.detail}`);
  }
  lines.push('');
  lines.push(`${thousands(report.sent)} requests, ${findings.length} finding${findings.length === 1 ? '' : 's'} (${findings.map((f) => `${f.class} in ${f.part}`).join(', ') || 'no 5xx, no hang, no answer without the envelope, no state change'}), ${(report.durationMs / 1000).toFixed(1)} s`);
  if (findings.length > 0) lines.push(`replay: ${replay}`);
  return lines.join('\n');
}
