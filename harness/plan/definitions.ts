/**
 * Which step definitions each requirement's scenarios would run, found
 * without running anything: the features are compiled to pickles the way
 * Cucumber compiles them, the step files are loaded through Cucumber's own
 * loadSupport, and every step text is matched against every definition with
 * the definitions' own matcher (the one Cucumber uses when it assembles a test
 * case). A text that matches none is undefined, one that matches several is
 * ambiguous; either leaves the scenario undetermined in a real run.
 *
 * Loading the step files imports them and the modules they import, nothing
 * more: the World starts servers and clients in hooks, which are not called.
 */
import { globSync, readFileSync } from 'node:fs';
import { relative, resolve, sep } from 'node:path';
import type { ISupportCodeLibrary } from '@cucumber/cucumber/api';
import { loadConfiguration, loadSupport } from '@cucumber/cucumber/api';
import { AstBuilder, compile, GherkinClassicTokenMatcher, Parser } from '@cucumber/gherkin';
import type { GherkinDocument, Pickle, Step } from '@cucumber/messages';
import { IdGenerator } from '@cucumber/messages';
import parseTagExpression from '@cucumber/tag-expressions';
import type { RequirementRecord } from '../catalog/types.ts';
import { InputError, UsageError } from '../errors.ts';
import { requirementTags } from '../report/classify.ts';

export interface DefinitionRef {
  /** Step file, relative to the project root. */
  uri: string;
  line: number;
  pattern: string;
}

/** A step text of a requirement that does not match exactly one definition. */
export interface StepGap {
  text: string;
  /** Where the text first occurs in the requirement's features. */
  uri: string;
  line: number;
  /** How many steps of the requirement's scenarios carry this text. */
  occurrences: number;
  /** The definitions it matches: none when undefined, several when ambiguous. */
  definitions: DefinitionRef[];
}

export interface RequirementPlan {
  id: string;
  title: string;
  feature: string;
  scenarios: number;
  steps: number;
  /** Step files defining the requirement's steps, sorted. */
  files: string[];
  undefined: StepGap[];
  ambiguous: StepGap[];
  /** At least one scenario, and every step matches exactly one definition. */
  defined: boolean;
}

export interface Plan {
  requirements: RequirementPlan[];
  /** Distinct step texts, over the listed requirements, that match no definition. */
  undefinedTexts: number;
  /** Distinct step texts, over the listed requirements, that match several. */
  ambiguousTexts: number;
}

export interface PlanInput {
  /** Project root: where the feature and step paths start. */
  root: string;
  records: readonly RequirementRecord[];
  /** Feature file globs, relative to the root. */
  paths: readonly string[];
  /** Step definition and support file globs, relative to the root. */
  imports: readonly string[];
  /** A Cucumber tag expression selecting scenarios; unselected requirements are left out. */
  tags?: string | undefined;
}

interface Matcher {
  matchesStepName(text: string): boolean;
}

interface CompiledStep {
  text: string;
  uri: string;
  line: number;
}

interface CompiledScenario {
  uri: string;
  tags: string[];
  steps: CompiledStep[];
}

export async function planRequirements(input: PlanInput): Promise<Plan> {
  const selects = tagFilter(input.tags);
  const scenarios = compileFeatures(input.root, input.paths).filter((scenario) => selects(scenario.tags));
  const definitions = await loadDefinitions(input.root, input.paths, input.imports);

  const byRequirement = new Map<string, CompiledScenario[]>();
  for (const scenario of scenarios) {
    for (const id of requirementTags(scenario.tags)) {
      const list = byRequirement.get(id);
      if (list) list.push(scenario);
      else byRequirement.set(id, [scenario]);
    }
  }
  // Matching is the slow part: each distinct text is matched once.
  const matches = new Map<string, DefinitionRef[]>();
  const matchesOf = (text: string): DefinitionRef[] => {
    let found = matches.get(text);
    if (found === undefined) {
      found = definitions.filter((d) => d.matcher.matchesStepName(text)).map((d) => d.ref);
      matches.set(text, found);
    }
    return found;
  };

  // Without a tag filter every requirement is listed, those without a scenario too; with one, only those it selects.
  const listed = input.tags === undefined ? input.records : input.records.filter((r) => byRequirement.has(r.id));
  const requirements = listed.map((record) => planRequirement(record, byRequirement.get(record.id) ?? [], matchesOf));
  const distinct = (gaps: (r: RequirementPlan) => StepGap[]) => new Set(requirements.flatMap((r) => gaps(r).map((gap) => gap.text))).size;
  return { requirements, undefinedTexts: distinct((r) => r.undefined), ambiguousTexts: distinct((r) => r.ambiguous) };
}

function planRequirement(record: RequirementRecord, scenarios: readonly CompiledScenario[], matchesOf: (text: string) => DefinitionRef[]): RequirementPlan {
  const files = new Set<string>();
  const gaps = new Map<string, StepGap>();
  let steps = 0;
  for (const scenario of scenarios) {
    for (const step of scenario.steps) {
      steps += 1;
      const definitions = matchesOf(step.text);
      if (definitions.length === 1) {
        files.add((definitions[0] as DefinitionRef).uri);
        continue;
      }
      const gap = gaps.get(step.text);
      if (gap) gap.occurrences += 1;
      else gaps.set(step.text, { text: step.text, uri: step.uri, line: step.line, occurrences: 1, definitions });
    }
  }
  const all = [...gaps.values()];
  const undefinedSteps = all.filter((gap) => gap.definitions.length === 0);
  const ambiguous = all.filter((gap) => gap.definitions.length > 1);
  return {
    id: record.id,
    title: record.title,
    feature: record.feature,
    scenarios: scenarios.length,
    steps,
    files: [...files].sort(),
    undefined: undefinedSteps,
    ambiguous,
    defined: scenarios.length > 0 && all.length === 0,
  };
}

function tagFilter(expression: string | undefined): (tags: string[]) => boolean {
  if (expression === undefined) return () => true;
  try {
    const node = parseTagExpression(expression);
    return (tags) => node.evaluate(tags);
  } catch (error) {
    throw new UsageError(`--tags is not a valid tag expression: ${(error as Error).message}`);
  }
}

/** Every scenario (one per outline row) of the features, with the line of each step in its file. */
function compileFeatures(root: string, paths: readonly string[]): CompiledScenario[] {
  const files = [...new Set(paths.flatMap((path) => globSync(path, { cwd: root })))].sort();
  const newId = IdGenerator.incrementing();
  const scenarios: CompiledScenario[] = [];
  for (const file of files) {
    const uri = toProjectPath(root, resolve(root, file));
    const document = parseFeatureFile(root, uri, newId);
    const stepLines = stepLinesOf(document);
    for (const pickle of compile(document, uri, newId)) scenarios.push(compiledScenario(pickle, stepLines));
  }
  return scenarios;
}

function parseFeatureFile(root: string, uri: string, newId: () => string): GherkinDocument {
  const source = readFileSync(resolve(root, uri), 'utf8');
  try {
    return { ...new Parser(new AstBuilder(newId), new GherkinClassicTokenMatcher()).parse(source), uri };
  } catch (error) {
    const first = (error as { errors?: { message: string; location?: { line?: number } }[] }).errors?.[0];
    const message = (first?.message ?? (error as Error).message).replace(/^\(\d+:\d+\): /, '');
    throw new InputError(uri, first?.location?.line, `the feature does not parse: ${message}`, 'correct the Gherkin at that line (docs/writing-features.md)');
  }
}

function stepLinesOf(document: GherkinDocument): Map<string, number> {
  const lines = new Map<string, number>();
  const add = (steps: readonly Step[]) => {
    for (const step of steps) lines.set(step.id, step.location.line);
  };
  for (const child of document.feature?.children ?? []) {
    if (child.background) add(child.background.steps);
    if (child.scenario) add(child.scenario.steps);
    for (const ruleChild of child.rule?.children ?? []) {
      if (ruleChild.background) add(ruleChild.background.steps);
      if (ruleChild.scenario) add(ruleChild.scenario.steps);
    }
  }
  return lines;
}

function compiledScenario(pickle: Pickle, stepLines: ReadonlyMap<string, number>): CompiledScenario {
  const fallback = pickle.location?.line ?? 0;
  return {
    uri: pickle.uri,
    tags: pickle.tags.map((tag) => tag.name),
    steps: pickle.steps.map((step) => ({ text: step.text, uri: pickle.uri, line: stepLines.get(step.astNodeIds[0] ?? '') ?? fallback })),
  };
}

/** The step definitions of the step files, loaded with Cucumber's loadSupport (which imports them and runs nothing). */
async function loadDefinitions(root: string, paths: readonly string[], imports: readonly string[]): Promise<{ ref: DefinitionRef; matcher: Matcher }[]> {
  const { runConfiguration } = await loadConfiguration({ file: false, provided: { paths: [...paths], import: [...imports] } }, { cwd: root });
  const support = await loadSupport(runConfiguration, { cwd: root });
  return stepDefinitionsOf(support).map((definition) => ({
    ref: { uri: toProjectPath(root, resolve(root, definition.uri)), line: definition.line, pattern: String(definition.pattern) },
    matcher: definition,
  }));
}

interface LoadedStepDefinition extends Matcher {
  uri: string;
  line: number;
  pattern: string | RegExp;
}

/**
 * The step definitions of a loaded library. Cucumber's public type hides them,
 * though the library it returns carries them (harness/run/cucumber.ts reads
 * them the same way); a Cucumber that stops doing so fails here loudly rather
 * than calling every step undefined.
 */
function stepDefinitionsOf(support: ISupportCodeLibrary): LoadedStepDefinition[] {
  const definitions = (support as unknown as { stepDefinitions?: unknown }).stepDefinitions;
  if (!Array.isArray(definitions) || definitions.some((d) => typeof (d as Partial<Matcher>)?.matchesStepName !== 'function')) {
    throw new Error('the loaded Cucumber support library carries no step definitions with matchesStepName; this Cucumber version is not supported by `plan`');
  }
  return definitions as LoadedStepDefinition[];
}

function toProjectPath(root: string, path: string): string {
  return relative(root, path).split(sep).join('/');
}
