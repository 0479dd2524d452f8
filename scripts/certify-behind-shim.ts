/**
 * Certifies the Protocol section of the reference server with no controls of
 * its own, behind the Python control shim (examples/python-control-shim): the
 * server is reached as any third-party server is, through a run config file
 * naming a generic HTTP adapter config, and every control comes from the shim.
 * Starts an embedded cluster and the shim exactly as
 * test/adapters/python-control-shim.test.ts does (scripts/lib/behind-shim.ts),
 * runs every requirement of the section, prints each one's status and exits 0
 * only when all of them passed (1 otherwise, 2 when it could not run).
 *
 *   node scripts/certify-behind-shim.ts [--out <report dir>] [--keep]
 *
 * The adapter and run configs (and, without --out, the report) are written to
 * a temporary folder, removed at the end unless --keep is given.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { loadRecords } from '../harness/catalog/records.ts';
import type { ConformanceReport } from '../harness/report/conformance-json.ts';
import { PROJECT_ROOT, runHarness, shimUnavailable, startShimStack, writeShimServerConfig } from './lib/behind-shim.ts';

const SECTION = 'Protocol Invariants';

const { values } = parseArgs({ options: { out: { type: 'string' }, keep: { type: 'boolean', default: false } } });

async function main(): Promise<number> {
  const unavailable = shimUnavailable();
  if (unavailable !== undefined) {
    console.error(`certify-behind-shim: ${unavailable}`);
    return 2;
  }
  // The section's requirements come from invariants.yaml, so a requirement added to it is certified too.
  const ids = loadRecords(join(PROJECT_ROOT, 'invariants.yaml'))
    .records.map(({ record }) => record)
    .filter((record) => record.section === SECTION)
    .map((record) => record.id);
  if (ids.length === 0) {
    console.error(`certify-behind-shim: invariants.yaml has no requirement in section "${SECTION}"`);
    return 2;
  }
  const scratch = mkdtempSync(join(tmpdir(), 'synchro-behind-shim-'));
  const out = values.out === undefined ? join(scratch, 'report') : resolve(values.out);
  const began = performance.now();
  try {
    const stack = await startShimStack();
    try {
      const server = writeShimServerConfig(join(scratch, 'server.json'), stack.urls);
      const runConfig = join(scratch, 'synchro-conformance.config.json');
      writeFileSync(runConfig, `${JSON.stringify({ server, client: 'reference', tags: ids.map((id) => `@${id}`).join(' or '), parallel: 1 }, null, 2)}\n`);
      console.log(`certifying ${ids.length} requirements of "${SECTION}" against the reference server behind the Python shim (${stack.urls.control_url})`);
      const run = await runHarness(['run', '--config', runConfig, '--out', out]);
      if (run.status !== 0 && run.status !== 1) {
        console.error(`the harness run ended with status ${run.status}:\n${run.output}`);
        return 2;
      }
      const report = JSON.parse(readFileSync(join(out, 'conformance.json'), 'utf8')) as ConformanceReport;
      const byId = new Map(report.requirements.map((r) => [r.id, r]));
      let passed = 0;
      for (const id of ids) {
        const requirement = byId.get(id);
        const status = requirement?.status ?? 'missing from the report';
        if (status === 'passed') passed += 1;
        console.log(`${id.padEnd(16)} ${status}${requirement?.reason ? ` (${requirement.reason})` : ''}`);
      }
      const kept = values.out !== undefined || values.keep ? `; report in ${out}` : '';
      console.log(`${passed} of ${ids.length} passed in ${((performance.now() - began) / 1000).toFixed(1)} s${kept}`);
      return passed === ids.length ? 0 : 1;
    } finally {
      await stack.stop();
    }
  } finally {
    if (!values.keep) rmSync(scratch, { recursive: true, force: true });
  }
}

process.exitCode = await main();
