/**
 * Reads what the mapping check needs from feature files: the feature-level
 * tags (with their lines), the title and how many scenarios the file holds.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { AstBuilder, GherkinClassicTokenMatcher, Parser } from '@cucumber/gherkin';
import { IdGenerator } from '@cucumber/messages';

export interface FeatureTag {
  name: string;
  line: number;
}

/** A `Rule:` of a feature (one per MUST or MUST NOT clause) and where its scenarios start. */
export interface FeatureRule {
  /** The rule's title, as written after `Rule:`. */
  title: string;
  /** 1-based line of the `Rule:` keyword. */
  line: number;
  /** 1-based lines of its `Scenario:` and `Scenario Outline:` keywords (what Cucumber's `file:line` selects). */
  scenarioLines: number[];
}

export interface FeatureFile {
  /** Path relative to the project root, with forward slashes (as records write it). */
  path: string;
  title: string;
  /** 1-based line of the `Feature:` keyword. */
  line: number;
  tags: FeatureTag[];
  scenarios: number;
  rules: FeatureRule[];
}

export interface FeatureParseError {
  path: string;
  line: number;
  message: string;
}

export type FeatureRead = { ok: true; feature: FeatureFile } | { ok: false; error: FeatureParseError };

export const REQUIREMENT_TAG = /^@SYNC-[A-Z]+-\d{3}$/;

export function parseFeature(text: string, path: string): FeatureRead {
  const parser = new Parser(new AstBuilder(IdGenerator.incrementing()), new GherkinClassicTokenMatcher());
  try {
    const feature = parser.parse(text).feature;
    if (!feature) return { ok: false, error: { path, line: 1, message: 'the file holds no Feature' } };
    let scenarios = 0;
    const rules: FeatureRule[] = [];
    const count = (children: typeof feature.children): void => {
      for (const child of children) {
        if (child.scenario) scenarios += Math.max(1, child.scenario.examples.reduce((n, e) => n + e.tableBody.length, 0));
        if (child.rule) {
          const scenarioLines = child.rule.children.flatMap((inner) => (inner.scenario ? [inner.scenario.location.line] : []));
          rules.push({ title: child.rule.name.trim(), line: child.rule.location.line, scenarioLines });
          count(child.rule.children);
        }
      }
    };
    count(feature.children);
    return {
      ok: true,
      feature: {
        path,
        title: feature.name,
        line: feature.location.line,
        tags: feature.tags.map((tag) => ({ name: tag.name, line: tag.location.line })),
        scenarios,
        rules,
      },
    };
  } catch (error) {
    const first = (error as { errors?: { message: string; location?: { line?: number } }[] }).errors?.[0];
    const message = (first?.message ?? (error as Error).message).replace(/^\(\d+:\d+\): /, '');
    return { ok: false, error: { path, line: first?.location?.line ?? 1, message } };
  }
}

/** Every `.feature` file below `dir`, as paths relative to `root`, sorted. */
export function listFeatureFiles(root: string, dir = 'features'): string[] {
  const found: string[] = [];
  const walk = (folder: string): void => {
    let names: string[];
    try {
      names = readdirSync(folder);
    } catch {
      return;
    }
    for (const name of names) {
      const full = join(folder, name);
      if (statSync(full).isDirectory()) walk(full);
      else if (name.endsWith('.feature')) found.push(relative(root, full).split('\\').join('/'));
    }
  };
  walk(join(root, dir));
  return found.sort();
}

export function readFeature(root: string, path: string): FeatureRead {
  return parseFeature(readFileSync(join(root, path), 'utf8'), path);
}
