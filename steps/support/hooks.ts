/**
 * Scenario gating and teardown.
 *
 * A scenario runs only when the implementations it needs can be driven and
 * declare the capabilities its tags ask for. Otherwise it is skipped with
 * evidence saying why, so the report shows it as undetermined or
 * not-applicable, never as passed. After it ran, every process it started is
 * killed and its state removed; wire violations seen by the proxy and client
 * protocol breaches fail it, with the client's captured output.
 */
import { After, AfterAll, AfterStep, Before, BeforeAll, BeforeStep, Status } from '@cucumber/cucumber';
import { CLIENT_CAPABILITIES, requiredCapabilities } from '../../harness/adapters/capabilities.ts';
import { FORM_EVIDENCE_PREFIX, FORM_MEANING, formRole, requiredForms } from '../../harness/adapters/forms.ts';
import { appliesServerFaults } from '../../harness/adapters/open.ts';
import { drainWarmPools, prepareAhead } from '../../harness/adapters/warm-pool.ts';
import { assertionsEvidence, notApplicableEvidence, resourcesEvidence, undeterminedEvidence } from '../../harness/report/evidence.ts';
import { scenarioKey } from '../../harness/run/incomplete.ts';
import { stopStage } from './client-lifecycle/observe.ts';
import { relays } from './opaque-tokens/tokens.ts';
import { snapshotServerState } from './server-state.ts';
import { type Snapshot, snapshotOf, snapshots, UNCHANGED } from './wire-values/client-state.ts';
import type { SyncWorld } from './world.ts';
import './world.ts';

// Every hook of the step library is in this file. After hooks run in the
// reverse of the order they are declared here: the scenario's own teardown
// (the last After below) first, then the alias relay, then the fault stage.
After(async function (this: SyncWorld) {
  await stopStage(this);
});

After(async function (this: SyncWorld) {
  const relay = relays.get(this);
  if (!relay) return;
  relays.delete(this);
  await relay.stop();
  if (relay.notes.length > 0) throw new Error(`the alias relay could not keep the client's view consistent:\n- ${relay.notes.join('\n- ')}`);
});

/**
 * The first implementation form the scenario is for that its implementation
 * does not declare, with the not-applicable evidence saying so. Checked
 * before anything else: such a scenario is outside the implementation
 * whether or not its steps exist.
 */
function undeclaredForm(world: SyncWorld, tags: readonly string[]): { capability: string; reason: string } | undefined {
  for (const form of requiredForms(tags).known) {
    const role = formRole(form);
    const setup = role === 'client' ? world.clientSetup : world.serverSetup;
    if ((setup.forms ?? []).includes(form)) continue;
    return { capability: `${FORM_EVIDENCE_PREFIX}${form}`, reason: `the requirement is about an implementation ${FORM_MEANING[form]}, and ${role} adapter "${setup.id}" does not declare the form "${form}" (\`forms\` in its adapter config)` };
  }
  return undefined;
}

/** Why the scenario cannot run at all, or undefined. */
function undeterminedReason(world: SyncWorld, tags: readonly string[], stepKey: string): string | undefined {
  const missing = world.parameters.incomplete?.[stepKey];
  if (missing !== undefined) return `the step "${missing}" has no single step definition yet, so the scenario cannot reach a verdict`;
  // A feature that binds only servers needs no client process.
  const needed = tags.includes('@client') ? [world.serverSetup, world.clientSetup] : [world.serverSetup];
  const role = (setup: (typeof needed)[number]) => (setup === world.clientSetup ? 'client' : 'server');
  const unavailable = needed.find((setup) => !setup.available);
  if (unavailable) return `${role(unavailable)} adapter "${unavailable.id}" is unavailable: ${unavailable.reason ?? 'no reason given'}`;
  const { unknown } = requiredCapabilities(tags);
  if (unknown.length > 0) return `the scenario asks for unknown capabilities: ${unknown.join(', ')}`;
  const unknownForms = requiredForms(tags).unknown;
  if (unknownForms.length > 0) return `the scenario asks for unknown implementation forms: ${unknownForms.join(', ')}`;
  const { fault } = world.parameters;
  if (fault !== undefined) {
    if (!world.fault) return `fault "${fault}" is not in the fault registry`;
    if (world.fault.kind === 'server' && !appliesServerFaults(world.serverSetup)) return `server adapter "${world.serverSetup.id}" cannot switch on server fault ${fault}`;
  }
  return undefined;
}

/**
 * Sensitivity runs (world parameter `stopAtDetection`): once a Then step of
 * the rule under test failed, the fault is proven detected and the rule's
 * remaining scenarios are not run. Reset for each run.
 */
let detectedInThisRun = false;

BeforeAll(() => {
  detectedInThisRun = false;
});

Before(function (this: SyncWorld, { pickle }) {
  this.stepTexts = pickle.steps.map((step) => step.text);
  // A fault run mostly stops at its first scenario: a server or client process prepared ahead
  // would mostly be started only to be disposed of, so a sensitivity run starts each on demand.
  prepareAhead(this.parameters.stopAtDetection !== true);
  if (this.parameters.stopAtDetection === true && detectedInThisRun) {
    const evidence = undeterminedEvidence('not run: a Then step of an earlier scenario of this rule already failed under the fault');
    this.attach(evidence.body, evidence.mediaType);
    return 'skipped';
  }
  const tags = pickle.tags.map((tag) => tag.name);
  const outside = undeclaredForm(this, tags);
  if (outside) {
    const evidence = notApplicableEvidence(outside.capability, outside.reason);
    this.attach(evidence.body, evidence.mediaType);
    return 'skipped';
  }
  const reason = undeterminedReason(this, tags, scenarioKey(pickle.uri, this.stepTexts));
  if (reason) {
    const evidence = undeterminedEvidence(reason);
    this.attach(evidence.body, evidence.mediaType);
    return 'skipped';
  }
  const declared = new Set<string>([...this.serverSetup.capabilities, ...this.clientSetup.capabilities]);
  const missing = requiredCapabilities(tags).known.find((capability) => !declared.has(capability));
  if (missing) {
    const role = (CLIENT_CAPABILITIES as readonly string[]).includes(missing) ? 'client' : 'server';
    const owner = role === 'client' ? this.clientSetup : this.serverSetup;
    const evidence = notApplicableEvidence(missing, `${role} adapter "${owner.id}" does not provide the "${missing}" capability`);
    this.attach(evidence.body, evidence.mediaType);
    return 'skipped';
  }
  return undefined;
});

// Declaring source tables and their scope placement only describes them; the
// first step after the declarations installs them all on the server at once.
const DECLARATION = [/^a registered table "[^"]+" with columns:?$/, /^table "[^"]+" (?:places|also places|marks deletion|is registered with max_scope_fanout)/, /^the source relation of "[^"]+" is range-partitioned /];

const SNAPSHOT_STEP = /^no durable state changed on the server$/;

BeforeStep(async function (this: SyncWorld, { pickle, pickleStep }) {
  this.assertionsBeforeStep = this.assert.count;
  // "These responses" are the replies recorded from the scenario's first action on.
  if (pickleStep.type === 'Action' && this.repliesBeforeAction === undefined) this.repliesBeforeAction = this.replies.length;
  if (this.model.pending && !DECLARATION.some((pattern) => pattern.test(pickleStep.text))) await this.readyServer();
  // "No durable state changed" compares against the state right before the scenario's first action.
  if (pickleStep.type === 'Action' && this.serverSnapshot === undefined && pickle.steps.some((step) => SNAPSHOT_STEP.test(step.text))) {
    this.serverSnapshot = await snapshotServerState(await this.readyServer(), this.deadlineMs);
  }
});

// A Then step has to check something the implementation produced: one that
// passes without executing an assertion proves nothing, and the report makes
// its scenario undetermined with the step named.
AfterStep(function (this: SyncWorld, { pickleStep, result }) {
  if (pickleStep.type !== 'Outcome') return;
  if (result.status === Status.PASSED && this.assert.count === this.assertionsBeforeStep) this.unassertedSteps.push(pickleStep.text);
  if (result.status === Status.FAILED && this.parameters.stopAtDetection === true) detectedInThisRun = true;
});

After(async function (this: SyncWorld) {
  const evidence = assertionsEvidence(this.assert.count, this.unassertedSteps);
  this.attach(evidence.body, evidence.mediaType);
  const resources = resourcesEvidence(this.resources());
  this.attach(resources.body, resources.mediaType);
  const problems = await this.problems();
  const teardownErrors = await this.teardown();
  if (problems.length > 0) throw new Error(`the implementation under test broke the protocol:\n- ${problems.join('\n- ')}`);
  if (teardownErrors.length > 0) throw new Error(`teardown failed:\n- ${teardownErrors.join('\n- ')}`);
});

// Servers and client processes started ahead of need, and the servers still
// being stopped, are all gone before the run ends; a cleanup that failed is
// a problem of the run, reported instead of dropped.
AfterAll(async () => {
  const failures = await drainWarmPools();
  if (failures.length > 0) throw new Error(`cleanup after the scenarios failed:\n- ${failures.join('\n- ')}`);
});

// The picture is taken right before the scenario's first action, like the server's.
BeforeStep(async function (this: SyncWorld, { pickle, pickleStep }) {
  if (pickleStep.type !== 'Action' || snapshots.has(this)) return;
  const names = pickle.steps.map((step) => UNCHANGED.exec(step.text)?.[1]).filter((name): name is string => name !== undefined);
  if (names.length === 0) return;
  const taken = new Map<string, Snapshot>();
  for (const name of names) taken.set(name, await snapshotOf(this, name));
  snapshots.set(this, taken);
});
