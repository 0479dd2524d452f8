/**
 * Renders `junit.xml` for CI dashboards: one testsuite per catalog section,
 * one testcase per requirement. A failed requirement is a <failure>; an
 * undetermined or not-applicable one is <skipped> with its reason, so a CI
 * view never shows it as green.
 */
import type { ConformanceReport, ReportRequirement } from './conformance-json.ts';

/** Escapes text for XML 1.0 and drops the control characters XML 1.0 cannot carry at all. */
export function escapeXml(text: string): string {
  return text
    .replace(/[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu, '\uFFFD')
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;')
    .replaceAll("'", '&apos;');
}

export function renderJunit(report: ConformanceReport): string {
  const sections: string[] = [];
  for (const r of report.requirements) if (!sections.includes(r.section)) sections.push(r.section);
  const suites = sections.map((section) => renderSuite(section, report.requirements.filter((r) => r.section === section)));
  const overall = report.summary.overall;
  const time = seconds(report.requirements.reduce((sum, r) => sum + requirementMillis(r), 0));
  return `<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="${escapeXml(`${report.harness.name} ${report.harness.version}`)}" tests="${overall.total}" failures="${overall.failed}" errors="0" skipped="${overall.undetermined + overall['not-applicable']}" time="${time}" timestamp="${escapeXml(report.run.started_at ?? report.generated_at)}">
${suites.join('\n')}
</testsuites>
`;
}

function renderSuite(section: string, requirements: readonly ReportRequirement[]): string {
  const failures = requirements.filter((r) => r.status === 'failed').length;
  const skipped = requirements.filter((r) => r.status === 'undetermined' || r.status === 'not-applicable').length;
  const time = seconds(requirements.reduce((sum, r) => sum + requirementMillis(r), 0));
  const cases = requirements.map(renderCase).join('\n');
  return `  <testsuite name="${escapeXml(section)}" tests="${requirements.length}" failures="${failures}" errors="0" skipped="${skipped}" time="${time}">
${cases}
  </testsuite>`;
}

function renderCase(r: ReportRequirement): string {
  const open = `    <testcase classname="${escapeXml(r.section)}" name="${escapeXml(`${r.id} ${r.title}`)}" file="${escapeXml(r.feature)}" time="${seconds(requirementMillis(r))}"`;
  const reason = r.reason ?? '';
  if (r.status === 'passed') return `${open}/>`;
  if (r.status === 'failed') {
    const details = r.scenarios
      .filter((s) => s.status === 'failed')
      .map((s) => {
        const errors = s.steps.filter((step) => step.error !== null).map((step) => `  ${step.keyword} ${step.text}\n${step.error}`);
        return `Scenario: ${s.name} (${s.uri}:${s.line})\n${s.reason ?? ''}\n${errors.join('\n')}`;
      })
      .join('\n\n');
    return `${open}>\n      <failure message="${escapeXml(reason)}" type="failed">${escapeXml(details)}</failure>\n    </testcase>`;
  }
  const label = r.status === 'undetermined' ? 'undetermined' : 'not applicable';
  return `${open}>\n      <skipped message="${escapeXml(`${label}: ${reason}`)}"/>\n    </testcase>`;
}

function requirementMillis(r: ReportRequirement): number {
  return r.scenarios.reduce((sum, s) => sum + s.steps.reduce((t, step) => t + step.duration_ms, 0), 0);
}

function seconds(ms: number): string {
  return (ms / 1000).toFixed(3);
}
