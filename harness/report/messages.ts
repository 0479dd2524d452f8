/**
 * Reads the NDJSON message stream Cucumber writes with `--format message:<file>`
 * and indexes what the report needs to join results back to scenarios.
 *
 * Every envelope is validated against the schema shipped with
 * `@cucumber/messages`, so a truncated or hand-edited stream is refused with
 * the line that is wrong instead of producing a quietly wrong report.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type {
  Attachment,
  Envelope,
  GherkinDocument,
  Hook,
  Meta,
  ParseError,
  Pickle,
  Scenario,
  Step,
  StepDefinition,
  TestCase,
  TestCaseFinished,
  TestCaseStarted,
  TestRunFinished,
  TestRunHookFinished,
  TestRunHookStarted,
  TestRunStarted,
  TestStepResult,
} from '@cucumber/messages';
import type { ValidateFunction } from 'ajv/dist/2020.js';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { InputError } from '../errors.ts';

export interface MessageIndex {
  file: string;
  meta: Meta | undefined;
  documents: Map<string, GherkinDocument>;
  /** Gherkin scenarios by AST node id, with the uri of their document. */
  scenarios: Map<string, { scenario: Scenario; uri: string }>;
  /** Gherkin steps (of scenarios and backgrounds) by AST node id: the source of step keywords. */
  steps: Map<string, Step>;
  /** Pickles in the order Cucumber emitted them (file order). */
  pickles: Pickle[];
  testCases: Map<string, TestCase>;
  testCaseByPickle: Map<string, TestCase>;
  /** Attempts of each test case, by test case id, in attempt order. */
  attempts: Map<string, TestCaseStarted[]>;
  finished: Map<string, TestCaseFinished>;
  /** Step results by test case attempt id, then by test step id. */
  stepResults: Map<string, Map<string, TestStepResult>>;
  /** Attachments by test case attempt id. */
  attachments: Map<string, Attachment[]>;
  hooks: Map<string, Hook>;
  stepDefinitions: Map<string, StepDefinition>;
  parseErrors: ParseError[];
  runHooksStarted: Map<string, TestRunHookStarted>;
  runHooksFinished: TestRunHookFinished[];
  testRunStarted: TestRunStarted | undefined;
  testRunFinished: TestRunFinished | undefined;
}

const FIX = 'pass the file Cucumber wrote with --format message:<file>, unchanged';

let envelopeValidator: ValidateFunction | undefined;

function validator(): ValidateFunction {
  if (envelopeValidator === undefined) {
    // The schema is a JSON file inside the package; require() reads it without
    // depending on how the package's exports map treats JSON imports.
    const require = createRequire(import.meta.url);
    const schema = require('@cucumber/messages/schema') as object;
    envelopeValidator = new Ajv2020({ strict: false, allErrors: false }).compile(schema);
  }
  return envelopeValidator;
}

/** Parses the NDJSON text of a message file; `file` is used only in error messages. */
export function parseMessages(text: string, file: string): Envelope[] {
  const validate = validator();
  const envelopes: Envelope[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i += 1) {
    const line = (lines[i] ?? '').trim();
    if (line === '') continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (error) {
      throw new InputError(file, i + 1, `line is not valid JSON (${(error as Error).message})`, FIX);
    }
    if (!validate(value)) {
      const first = validate.errors?.[0];
      const where = first === undefined ? '' : ` at ${first.instancePath || '/'}: ${first.message ?? ''}`;
      throw new InputError(file, i + 1, `line is not a Cucumber message envelope${where}`, FIX);
    }
    envelopes.push(value as Envelope);
  }
  if (envelopes.length === 0) {
    throw new InputError(file, undefined, 'file holds no Cucumber messages', FIX);
  }
  return envelopes;
}

export function readMessages(file: string): MessageIndex {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new InputError(file, undefined, `cannot read the message file (${(error as Error).message})`, FIX);
  }
  return indexMessages(parseMessages(text, file), file);
}

export function indexMessages(envelopes: readonly Envelope[], file: string): MessageIndex {
  const index: MessageIndex = {
    file,
    meta: undefined,
    documents: new Map(),
    scenarios: new Map(),
    steps: new Map(),
    pickles: [],
    testCases: new Map(),
    testCaseByPickle: new Map(),
    attempts: new Map(),
    finished: new Map(),
    stepResults: new Map(),
    attachments: new Map(),
    hooks: new Map(),
    stepDefinitions: new Map(),
    parseErrors: [],
    runHooksStarted: new Map(),
    runHooksFinished: [],
    testRunStarted: undefined,
    testRunFinished: undefined,
  };
  for (const envelope of envelopes) addEnvelope(index, envelope);
  for (const list of index.attempts.values()) list.sort((a, b) => a.attempt - b.attempt);
  return index;
}

function addEnvelope(index: MessageIndex, e: Envelope): void {
  if (e.meta) index.meta = e.meta;
  else if (e.gherkinDocument) addDocument(index, e.gherkinDocument);
  else if (e.pickle) index.pickles.push(e.pickle);
  else if (e.testCase) {
    index.testCases.set(e.testCase.id, e.testCase);
    index.testCaseByPickle.set(e.testCase.pickleId, e.testCase);
  } else if (e.testCaseStarted) pushTo(index.attempts, e.testCaseStarted.testCaseId, e.testCaseStarted);
  else if (e.testCaseFinished) index.finished.set(e.testCaseFinished.testCaseStartedId, e.testCaseFinished);
  else if (e.testStepFinished) {
    const { testCaseStartedId, testStepId, testStepResult } = e.testStepFinished;
    let results = index.stepResults.get(testCaseStartedId);
    if (results === undefined) {
      results = new Map();
      index.stepResults.set(testCaseStartedId, results);
    }
    results.set(testStepId, testStepResult);
  } else if (e.attachment) {
    if (e.attachment.testCaseStartedId !== undefined) {
      pushTo(index.attachments, e.attachment.testCaseStartedId, e.attachment);
    }
  } else if (e.hook) index.hooks.set(e.hook.id, e.hook);
  else if (e.stepDefinition) index.stepDefinitions.set(e.stepDefinition.id, e.stepDefinition);
  else if (e.parseError) index.parseErrors.push(e.parseError);
  else if (e.testRunHookStarted) index.runHooksStarted.set(e.testRunHookStarted.id, e.testRunHookStarted);
  else if (e.testRunHookFinished) index.runHooksFinished.push(e.testRunHookFinished);
  else if (e.testRunStarted) index.testRunStarted = e.testRunStarted;
  else if (e.testRunFinished) index.testRunFinished = e.testRunFinished;
}

function addDocument(index: MessageIndex, document: GherkinDocument): void {
  const uri = document.uri ?? '';
  index.documents.set(uri, document);
  const feature = document.feature;
  if (feature === undefined) return;
  const addSteps = (steps: readonly Step[]) => {
    for (const step of steps) index.steps.set(step.id, step);
  };
  for (const child of feature.children) {
    const nested = child.rule ? child.rule.children : [child];
    for (const node of nested) {
      if (node.background) addSteps(node.background.steps);
      if (node.scenario) {
        index.scenarios.set(node.scenario.id, { scenario: node.scenario, uri });
        addSteps(node.scenario.steps);
      }
    }
  }
}

function pushTo<T>(map: Map<string, T[]>, key: string, value: T): void {
  const list = map.get(key);
  if (list === undefined) map.set(key, [value]);
  else list.push(value);
}

/** Converts a message timestamp or duration to milliseconds. */
export function toMillis(time: { seconds: number; nanos: number }): number {
  return time.seconds * 1000 + time.nanos / 1e6;
}
