/**
 * Scenarios that cannot reach a verdict because one of their steps has no
 * step definition yet (or more than one). Cucumber would still run the steps
 * before the missing one, starting servers and clients for a result that can
 * only be "undetermined", and a failure there would be reported against a
 * requirement whose check does not exist yet. So the run lists them up front
 * and the Before hook skips them with undetermined evidence naming the step.
 */
import { createHash } from 'node:crypto';
import { globSync, readFileSync } from 'node:fs';
import { relative, resolve } from 'node:path';
import { AstBuilder, compile, GherkinClassicTokenMatcher, Parser } from '@cucumber/gherkin';
import { IdGenerator } from '@cucumber/messages';

/** Identifies a scenario (one outline row) by its feature and step texts, the same in every worker. */
export function scenarioKey(uri: string, stepTexts: readonly string[]): string {
  return createHash('sha256').update(uri).update('\0').update(stepTexts.join('\0')).digest('hex').slice(0, 24);
}

interface StepMatcher {
  matchesStepName(text: string): boolean;
}

/** Key of each incomplete scenario mapped to its first step without exactly one definition. */
export function incompleteScenarios(cwd: string, paths: readonly string[], definitions: readonly StepMatcher[]): Record<string, string> {
  const files = [...new Set(paths.flatMap((path) => globSync(path, { cwd })))].sort();
  const found: Record<string, string> = {};
  const newId = IdGenerator.incrementing();
  // Pickles share most of their step texts (backgrounds, common steps): each text is matched once.
  const matchCount = new Map<string, number>();
  const definitionsMatching = (text: string): number => {
    let count = matchCount.get(text);
    if (count === undefined) {
      count = definitions.filter((definition) => definition.matchesStepName(text)).length;
      matchCount.set(text, count);
    }
    return count;
  };
  for (const file of files) {
    const uri = relative(cwd, resolve(cwd, file));
    const source = readFileSync(resolve(cwd, file), 'utf8');
    const document = new Parser(new AstBuilder(newId), new GherkinClassicTokenMatcher()).parse(source);
    for (const pickle of compile(document, uri, newId)) {
      const texts = pickle.steps.map((step) => step.text);
      const missing = texts.find((text) => definitionsMatching(text) !== 1);
      if (missing !== undefined) found[scenarioKey(uri, texts)] = missing;
    }
  }
  return found;
}
