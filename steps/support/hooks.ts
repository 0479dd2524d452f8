/**
 * Scenario gating: a scenario runs only when the implementations it needs can
 * be driven and declare the capabilities its tags ask for. Otherwise it is
 * skipped with evidence saying why, so the report shows it as undetermined or
 * not-applicable, never as passed.
 */
import { After, Before } from '@cucumber/cucumber';
import { requiredCapabilities } from '../../harness/adapters/capabilities.ts';
import { probeAdapter, type AdapterProbe } from '../../harness/adapters/probe.ts';
import { assertionsEvidence, notApplicableEvidence, undeterminedEvidence } from '../../harness/report/evidence.ts';
import type { SyncWorld } from './world.ts';

// Probed once per worker process, at its first scenario (where the world parameters are known).
let probes: { server: AdapterProbe; client: AdapterProbe } | undefined;

Before(function (this: SyncWorld, { pickle }) {
  const { server = 'reference', client = 'reference', root = process.cwd() } = this.parameters;
  probes ??= { server: probeAdapter('server', server, root), client: probeAdapter('client', client, root) };
  this.server = probes.server;
  this.client = probes.client;
  const tags = pickle.tags.map((tag) => tag.name);
  // A feature that binds only servers needs no client process.
  const needed = tags.includes('@client') ? [probes.server, probes.client] : [probes.server];
  const unavailable = needed.find((probe) => !probe.available);
  if (unavailable) {
    const evidence = undeterminedEvidence(`${unavailable.role} adapter "${unavailable.id}" is unavailable: ${unavailable.reason ?? 'no reason given'}`);
    this.attach(evidence.body, evidence.mediaType);
    return 'skipped';
  }
  const { known, unknown } = requiredCapabilities(tags);
  if (unknown.length > 0) {
    const evidence = undeterminedEvidence(`the scenario asks for unknown capabilities: ${unknown.join(', ')}`);
    this.attach(evidence.body, evidence.mediaType);
    return 'skipped';
  }
  const declared = new Set([...probes.server.capabilities, ...probes.client.capabilities]);
  const missing = known.find((capability) => !declared.has(capability));
  if (missing) {
    const evidence = notApplicableEvidence(missing, `the adapters under test do not provide the "${missing}" capability`);
    this.attach(evidence.body, evidence.mediaType);
    return 'skipped';
  }
  return undefined;
});

After(function (this: SyncWorld) {
  const evidence = assertionsEvidence(this.assert.count);
  this.attach(evidence.body, evidence.mediaType);
});
