/**
 * Renders `conformance.html`: one self-contained page a release manager can
 * open from disk or a CI artifact. The markup is rendered here (readable
 * without JavaScript); the inline script only filters. A Content-Security-Policy
 * forbids every network fetch, and every string from the input is escaped.
 */
import type { Status, StepStatus } from './classify.ts';
import type { ConformanceReport, Counts, ReportRequirement, ReportScenario, SensitivityResult } from './conformance-json.ts';

const STATUS_LABEL: Record<Status, string> = {
  passed: 'passed',
  failed: 'failed',
  undetermined: 'undetermined',
  'not-applicable': 'not applicable',
};
const STATUS_ORDER: readonly Status[] = ['failed', 'undetermined', 'not-applicable', 'passed'];
const STEP_MARK: Record<StepStatus, string> = {
  passed: '✓',
  failed: '✗',
  skipped: '–',
  pending: '…',
  undefined: '?',
  ambiguous: '≈',
  unknown: '·',
};

export function escapeHtml(text: string): string {
  return text
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;')
    .replaceAll("'", '&#39;');
}

/** JSON that is safe inside a <script> element: no '<', '>' or '&' survive literally. */
export function embedJson(value: unknown): string {
  return JSON.stringify(value)
    .replaceAll('<', '\\u003c')
    .replaceAll('>', '\\u003e')
    .replaceAll('&', '\\u0026')
    .replaceAll('\u2028', '\\u2028')
    .replaceAll('\u2029', '\\u2029');
}

export function renderHtml(report: ConformanceReport): string {
  const sections = report.summary.by_section.map((s) => s.section);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">
<title>Synchro conformance report</title>
<style>${STYLE}</style>
</head>
<body>
<header class="page">
<h1>Synchro protocol 3 conformance</h1>
${renderFacts(report)}
</header>
<main>
${renderSummary(report)}
${renderProblems(report)}
${report.sensitivity ? renderSensitivity(report.sensitivity) : ''}
<section class="requirements" aria-label="Requirements">
<h2>Requirements</h2>
<form class="filters" id="filters" role="search">
<label>Search <input type="search" id="filter-text" placeholder="id, title, reason"></label>
<label>Status <select id="filter-status"><option value="">all</option>${STATUS_ORDER.map((s) => `<option value="${s}">${STATUS_LABEL[s]}</option>`).join('')}</select></label>
<label>Section <select id="filter-section"><option value="">all</option>${sections.map((s) => `<option value="${escapeHtml(s)}">${escapeHtml(s)}</option>`).join('')}</select></label>
<label>Profile <select id="filter-profile"><option value="">all</option><option value="server">server</option><option value="client">client</option><option value="full">full</option></select></label>
<button type="button" id="expand-all">Expand all</button>
<button type="button" id="collapse-all">Collapse all</button>
</form>
<p class="shown" id="shown" aria-live="polite">Showing ${report.requirements.length} of ${report.requirements.length} requirements</p>
<div id="requirement-list">
${report.requirements.map(renderRequirement).join('\n')}
</div>
<p class="empty" id="no-match" hidden>No requirement matches these filters.</p>
${renderNotSelected(report)}
</section>
</main>
<script type="application/json" id="report-data">${embedJson(report)}</script>
<script>${SCRIPT}</script>
</body>
</html>
`;
}

function renderFacts(report: ConformanceReport): string {
  const adapter = (a: ConformanceReport['implementation']['server']) =>
    a === null ? '<span class="muted">none</span>' : `<code>${escapeHtml(a.id)}</code>${a.description ? ` ${escapeHtml(a.description)}` : ''}`;
  const run = report.run;
  const facts: [string, string][] = [
    ['Server', adapter(report.implementation.server)],
    ['Client', adapter(report.implementation.client)],
    ['Harness', `${escapeHtml(report.harness.name)} ${escapeHtml(report.harness.version)}`],
    ['Catalog', `<code>${escapeHtml(report.catalog.path)}</code> <span class="hash" title="SHA-256">sha256 ${escapeHtml(report.catalog.sha256)}</span>`],
    ['Vector set', report.vector_set_hash === null ? '<span class="muted">not given</span>' : `<span class="hash">${escapeHtml(report.vector_set_hash)}</span>`],
    ['Run', run.started_at === null ? '<span class="muted">no start time</span>' : `${escapeHtml(run.started_at)}${run.duration_ms === null ? '' : `, ${formatDuration(run.duration_ms)}`}${run.cucumber_version ? `, Cucumber ${escapeHtml(run.cucumber_version)}` : ''}`],
    ['Generated', escapeHtml(report.generated_at)],
  ];
  return `<dl class="facts">${facts.map(([k, v]) => `<div><dt>${k}</dt><dd>${v}</dd></div>`).join('')}</dl>`;
}

function renderSummary(report: ConformanceReport): string {
  const overall = report.summary.overall;
  const tiles = STATUS_ORDER.map(
    (s) => `<div class="tile status-${s}"><span class="count">${overall[s]}</span><span class="label">${STATUS_LABEL[s]}</span></div>`,
  ).join('');
  const head = `<tr><th scope="col"></th><th scope="col">total</th>${STATUS_ORDER.map((s) => `<th scope="col">${STATUS_LABEL[s]}</th>`).join('')}</tr>`;
  const row = (name: string, counts: Counts) =>
    `<tr><th scope="row">${escapeHtml(name)}</th><td>${counts.total}</td>${STATUS_ORDER.map((s) => `<td class="${counts[s] > 0 ? `n status-${s}` : 'zero'}">${counts[s]}</td>`).join('')}</tr>`;
  const sections = report.summary.by_section.map((s) => row(s.section, s.counts)).join('');
  const profiles = (['server', 'client', 'full'] as const).map((p) => row(p, report.summary.by_profile[p])).join('');
  return `<section class="summary" aria-label="Summary">
<h2>Summary</h2>
<div class="tiles"><div class="tile total"><span class="count">${overall.total}</span><span class="label">requirements</span></div>${tiles}</div>
<div class="tables">
<table><caption>By section</caption><thead>${head}</thead><tbody>${sections}</tbody></table>
<table><caption>By profile</caption><thead>${head}</thead><tbody>${profiles}</tbody></table>
</div>
</section>`;
}

function renderProblems(report: ConformanceReport): string {
  if (report.problems.length === 0) return '';
  const items = report.problems
    .map((p) => {
      const where = p.uri === null ? '' : ` <code>${escapeHtml(p.uri)}${p.line === null ? '' : `:${p.line}`}</code>`;
      return `<li><span class="kind">${escapeHtml(p.kind)}</span>${where} ${escapeHtml(p.message)}</li>`;
    })
    .join('');
  return `<section class="problems" aria-label="Problems with the run"><h2>Problems with the run</h2><ul>${items}</ul></section>`;
}

function renderSensitivity(result: SensitivityResult): string {
  const pct = (d: { detected: number; total: number }) => (d.total === 0 ? '–' : `${Math.round((d.detected / d.total) * 100)}%`);
  const counts = (entries: [string, { detected: number; total: number }][]) =>
    entries.map(([name, d]) => `<tr><th scope="row">${escapeHtml(name)}</th><td>${d.detected} / ${d.total}</td><td>${pct(d)}</td></tr>`).join('');
  const certified = result.rules.filter((rule) => result.perRequirement[rule.id] !== undefined);
  const unproven = certified.filter((rule) => !rule.detected && rule.notApplicable === undefined);
  const outside = certified.filter((rule) => rule.notApplicable !== undefined);
  const ruleRows = [...unproven, ...certified.filter((rule) => rule.detected), ...outside]
    .map((rule) => {
      const recipes = result.results.filter((r) => r.id === rule.id && r.rule === rule.rule);
      if (rule.notApplicable !== undefined) {
        return `<tr class="status-not-applicable"><td><code>${escapeHtml(rule.id)}</code></td><td>${escapeHtml(rule.rule)}</td><td>not applicable</td><td>${escapeHtml(rule.notApplicable)}</td></tr>`;
      }
      const detail = recipes.length === 0 ? 'no fault recipe' : recipes.map((r) => `${r.fault}: ${r.outcome}${r.outcome === 'detected' ? '' : ` (${r.detail})`}`).join('; ');
      return `<tr class="${rule.detected ? 'status-passed' : 'status-failed'}"><td><code>${escapeHtml(rule.id)}</code></td><td>${escapeHtml(rule.rule)}</td><td>${rule.detected ? 'detected' : 'not proven'}</td><td>${escapeHtml(detail)}</td></tr>`;
    })
    .join('');
  return `<section class="sensitivity" aria-label="Sensitivity">
<h2>Sensitivity</h2>
<p>Each Rule (one MUST or MUST NOT clause) was run with fault recipes that break its clause; a Then step of that Rule must fail under each. Rules detected <strong>${result.total.detected} of ${result.total.total}</strong> (${pct(result.total)}).${outside.length > 0 ? ` ${outside.length} rule${outside.length === 1 ? ' has' : 's have'} no subject in this implementation (not applicable by form) and ${outside.length === 1 ? 'is' : 'are'} not counted.` : ''}${unproven.length > 0 ? ` <strong class="status-failed">${unproven.length} rule${unproven.length === 1 ? ' is' : 's are'} not proven.</strong>` : ''}</p>
<table><caption>By section (rules)</caption><thead><tr><th></th><th>detected</th><th>score</th></tr></thead><tbody>${counts(Object.entries(result.perSection))}</tbody></table>
<details><summary>By requirement (rules)</summary><table><thead><tr><th></th><th>detected</th><th>score</th></tr></thead><tbody>${counts(Object.entries(result.perRequirement))}</tbody></table></details>
<details><summary>All rules</summary><table class="faults"><thead><tr><th>requirement</th><th>rule</th><th>result</th><th>recipes</th></tr></thead><tbody>${ruleRows}</tbody></table></details>
</section>`;
}

function renderRequirement(r: ReportRequirement): string {
  const search = [r.id, r.title, r.section, r.reason ?? '', ...r.scenarios.map((s) => s.name)].join(' ').toLowerCase();
  const scenarios =
    r.scenarios.length === 0
      ? '<p class="muted">No scenario of this requirement ran.</p>'
      : r.scenarios.map(renderScenario).join('\n');
  return `<details class="requirement status-${r.status}" id="${escapeHtml(r.id)}" data-status="${r.status}" data-section="${escapeHtml(r.section)}" data-profiles="${escapeHtml(r.profiles.join(' '))}" data-search="${escapeHtml(search)}">
<summary><span class="badge status-${r.status}">${STATUS_LABEL[r.status]}</span> <span class="rid">${escapeHtml(r.id)}</span> <span class="rtitle">${escapeHtml(r.title)}</span> <span class="rsection">${escapeHtml(r.section)}</span>${r.reason === null ? '' : `<span class="reason">${escapeHtml(r.reason)}</span>`}</summary>
<div class="detail">
<dl class="meta"><div><dt>Catalog anchor</dt><dd><code>#${escapeHtml(r.anchor)}</code></dd></div><div><dt>Feature</dt><dd><code>${escapeHtml(r.feature)}</code></dd></div><div><dt>Applies to</dt><dd>${escapeHtml(r.applies_to.join(', '))}${r.internal ? ' (internal)' : ''}</dd></div><div><dt>Profiles</dt><dd>${escapeHtml(r.profiles.join(', '))}</dd></div></dl>
${scenarios}
</div>
</details>`;
}

function renderScenario(s: ReportScenario): string {
  const tags = s.tags.map((t) => `<span class="tag">${escapeHtml(t)}</span>`).join(' ');
  const facts = [
    `<code>${escapeHtml(s.uri)}:${s.line}</code>`,
    s.assertions === null ? 'no assertion count' : `${s.assertions} assertion${s.assertions === 1 ? '' : 's'}`,
    s.attempts > 1 ? `${s.attempts} attempts (last one counts)` : '',
  ].filter((f) => f !== '');
  const steps = s.steps
    .map((step) => {
      const error = step.error === null ? '' : `<pre class="error">${escapeHtml(step.error)}</pre>`;
      return `<li class="step ${step.kind} step-${step.status}"><span class="mark" title="${step.status}">${STEP_MARK[step.status]}</span> <span class="kw">${escapeHtml(step.keyword)}</span> <span class="text">${escapeHtml(step.text)}</span> <span class="dur">${step.status}${step.status === 'passed' || step.status === 'failed' ? ` · ${formatDuration(step.duration_ms)}` : ''}</span>${error}</li>`;
    })
    .join('');
  return `<div class="scenario status-${s.status}">
<h3><span class="badge status-${s.status}">${STATUS_LABEL[s.status]}</span> ${escapeHtml(s.name)}</h3>
<p class="sfacts">${facts.join(' · ')} ${tags}</p>
${s.reason === null ? '' : `<p class="reason">${escapeHtml(s.reason)}</p>`}
<ol class="steps">${steps}</ol>
</div>`;
}

function formatDuration(ms: number): string {
  if (ms < 1) return `${Math.round(ms * 1000)} µs`;
  if (ms < 1000) return `${Math.round(ms)} ms`;
  return `${(ms / 1000).toFixed(1)} s`;
}

const STYLE = `
:root{--passed:#1a7f37;--failed:#cf222e;--undetermined:#9a6700;--not-applicable:#57606a;--bg:#f6f8fa;--fg:#1f2328;--line:#d0d7de;--muted:#656d76;
font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:#fff;line-height:1.45}
body{margin:0}
header.page{background:var(--bg);border-bottom:1px solid var(--line);padding:1.2rem 2rem}
h1{margin:0 0 .8rem;font-size:1.5rem}
h2{font-size:1.15rem;margin:1.6rem 0 .6rem}
main{padding:0 2rem 3rem;max-width:80rem}
code,.hash,pre{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.85em}
.hash{word-break:break-all;color:var(--muted)}
.muted{color:var(--muted)}
dl.facts{display:grid;grid-template-columns:repeat(auto-fill,minmax(20rem,1fr));gap:.3rem 2rem;margin:0}
dl.facts div,dl.meta div{display:flex;gap:.6rem}
dt{font-weight:600;min-width:6rem}
dd{margin:0}
.tiles{display:flex;flex-wrap:wrap;gap:.8rem}
.tile{border:1px solid var(--line);border-top:4px solid var(--c,#8c959f);border-radius:6px;padding:.5rem 1rem;min-width:7rem;display:flex;flex-direction:column}
.tile .count{font-size:1.7rem;font-weight:700;color:var(--c,var(--fg))}
.tile .label{color:var(--muted)}
.status-passed{--c:var(--passed)}.status-failed{--c:var(--failed)}.status-undetermined{--c:var(--undetermined)}.status-not-applicable{--c:var(--not-applicable)}
.tables{display:flex;flex-wrap:wrap;gap:2rem;margin-top:1rem}
table{border-collapse:collapse;font-size:.9rem}
caption{text-align:left;font-weight:600;padding-bottom:.3rem}
th,td{border-bottom:1px solid var(--line);padding:.25rem .6rem;text-align:right}
th[scope=row],.faults td{text-align:left}
td.n{color:var(--c);font-weight:700}
td.zero{color:#afb8c1}
.problems ul{padding-left:1.2rem}
.problems li{margin:.3rem 0}
.problems .kind{font-weight:600;color:var(--failed);margin-right:.4rem}
.filters{display:flex;flex-wrap:wrap;gap:.8rem;align-items:end;background:var(--bg);border:1px solid var(--line);border-radius:6px;padding:.7rem}
.filters label{display:flex;flex-direction:column;font-size:.85rem;font-weight:600}
.filters input,.filters select,.filters button{font:inherit;font-weight:400;padding:.25rem .4rem;border:1px solid var(--line);border-radius:4px;background:#fff}
.filters input{min-width:16rem}
.filters button{cursor:pointer}
.shown{color:var(--muted);font-size:.9rem}
details.requirement{border:1px solid var(--line);border-left:6px solid var(--c);border-radius:6px;margin:.5rem 0;background:#fff}
details.requirement>summary{cursor:pointer;padding:.55rem .8rem;list-style:none;display:flex;flex-wrap:wrap;gap:.2rem .6rem;align-items:baseline}
details.requirement>summary::-webkit-details-marker{display:none}
details.requirement>summary::before{content:'▸';color:var(--muted);width:.8rem}
details.requirement[open]>summary::before{content:'▾'}
details.requirement[open]>summary{border-bottom:1px solid var(--line);background:var(--bg)}
.badge{display:inline-block;background:var(--c);color:#fff;border-radius:999px;padding:.05rem .6rem;font-size:.78rem;font-weight:600;white-space:nowrap}
.rid{font-family:ui-monospace,Menlo,Consolas,monospace;font-weight:600}
.rtitle{font-weight:600}
.rsection{color:var(--muted);font-size:.85rem}
summary .reason{flex-basis:100%;color:var(--muted);font-size:.88rem}
.detail{padding:.6rem 1rem 1rem}
dl.meta{display:grid;grid-template-columns:repeat(auto-fill,minmax(18rem,1fr));gap:.2rem 1.5rem;margin:0 0 .6rem;font-size:.88rem}
.scenario{border-top:1px dashed var(--line);padding:.6rem 0}
.scenario h3{font-size:1rem;margin:0 0 .2rem}
.sfacts{margin:0;color:var(--muted);font-size:.85rem}
.tag{background:var(--bg);border:1px solid var(--line);border-radius:4px;padding:0 .3rem;font-size:.78rem}
.scenario .reason{margin:.3rem 0;border-left:3px solid var(--c);padding-left:.5rem}
ol.steps{list-style:none;padding:0;margin:.4rem 0 0}
.step{padding:.1rem 0;font-size:.92rem}
.step.hook{color:var(--muted);font-size:.82rem}
.mark{display:inline-block;width:1.2rem;text-align:center;font-weight:700}
.kw{font-weight:600}
.dur{color:var(--muted);font-size:.78rem;margin-left:.4rem}
.step-passed .mark{color:var(--passed)}.step-failed .mark{color:var(--failed)}.step-skipped .mark{color:var(--not-applicable)}
.step-pending .mark,.step-undefined .mark,.step-ambiguous .mark,.step-unknown .mark{color:var(--undetermined)}
.step-failed .text{color:var(--failed)}
pre.error{background:#ffebe9;border:1px solid #ffcecb;border-radius:4px;padding:.5rem;margin:.3rem 0 .3rem 1.6rem;white-space:pre-wrap;word-break:break-word;color:#82071e}
.sensitivity .faults tr.status-failed td:nth-child(3){color:var(--failed);font-weight:700}
.empty{color:var(--muted)}
`;

// Filtering only toggles the hidden attribute; all markup is already on the page.
const SCRIPT = `
(function () {
  var list = document.getElementById('requirement-list');
  var items = Array.prototype.slice.call(list.querySelectorAll('details.requirement'));
  var text = document.getElementById('filter-text');
  var status = document.getElementById('filter-status');
  var section = document.getElementById('filter-section');
  var profile = document.getElementById('filter-profile');
  var shown = document.getElementById('shown');
  var none = document.getElementById('no-match');
  function apply() {
    var words = text.value.toLowerCase().split(/\\s+/).filter(Boolean);
    var count = 0;
    items.forEach(function (el) {
      var ok = (!status.value || el.dataset.status === status.value) &&
        (!section.value || el.dataset.section === section.value) &&
        (!profile.value || el.dataset.profiles.split(' ').indexOf(profile.value) >= 0) &&
        words.every(function (w) { return el.dataset.search.indexOf(w) >= 0; });
      el.hidden = !ok;
      if (ok) count += 1;
    });
    shown.textContent = 'Showing ' + count + ' of ' + items.length + ' requirements';
    none.hidden = count !== 0;
  }
  [text, status, section, profile].forEach(function (el) { el.addEventListener('input', apply); el.addEventListener('change', apply); });
  document.getElementById('filters').addEventListener('submit', function (e) { e.preventDefault(); });
  document.getElementById('expand-all').addEventListener('click', function () { items.forEach(function (el) { if (!el.hidden) el.open = true; }); });
  document.getElementById('collapse-all').addEventListener('click', function () { items.forEach(function (el) { el.open = false; }); });
  if (location.hash) { var target = document.getElementById(decodeURIComponent(location.hash.slice(1))); if (target && target.tagName === 'DETAILS') target.open = true; }
  apply();
})();
`;

/** Requirements the run's --tags or --profile left out: named, with no verdict. */
function renderNotSelected(report: ConformanceReport): string {
  const left = report.not_selected ?? [];
  if (left.length === 0) return '';
  const items = left.map((r) => `<li><code>${escapeHtml(r.id)}</code> ${escapeHtml(r.title)}</li>`).join('');
  return `<details class="not-selected"><summary>${left.length} requirement${left.length === 1 ? '' : 's'} not selected by this run's --tags or --profile (no verdict)</summary><ul>${items}</ul></details>`;
}
