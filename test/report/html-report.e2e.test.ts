/**
 * Opens conformance.html in a real browser (Debian's Chromium, never a
 * downloaded one), uses the filters, opens a failed requirement and checks
 * what a person would see, down to the pixels of a screenshot.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import type { Browser, Locator, Page } from 'playwright-core';
import { chromium } from 'playwright-core';
import { REPORT_FILES, writeReports } from '../../harness/report/write.ts';
import { fixtureRecords } from './fixtures/run-fixtures.ts';
import { fixtureRun, tempDir } from './helpers.ts';
import { countColour, decodePng } from './png.ts';

const CHROMIUM = '/usr/bin/chromium';
/** The failed-status colour of the page's stylesheet (#cf222e). */
const FAILED_RGB = [0xcf, 0x22, 0x2e] as const;

let browser: Browser;
let page: Page;
let outDir: string;
const foreignRequests: string[] = [];
const pageErrors: string[] = [];

before(async () => {
  assert.ok(
    existsSync(CHROMIUM),
    `${CHROMIUM} is missing: this test drives Debian's Chromium and never downloads a browser. Install it with "apt-get install -y chromium".`,
  );
  const fixture = await fixtureRun();
  outDir = tempDir('report-html-');
  writeReports({
    messagesFile: fixture.messagesFile,
    records: fixtureRecords(),
    catalogFile: fixture.catalogFile,
    implementation: { server: { id: 'reference', description: 'reference server' }, client: { id: 'reference', description: 'reference client' } },
    sensitivity: {
      total: { detected: 1, total: 2 },
      perSection: { 'Protocol Invariants': { detected: 1, total: 2 } },
      perRequirement: { 'SYNC-FIX-001': { detected: 1, total: 1 }, 'SYNC-FIX-011': { detected: 0, total: 1 } },
      rules: [
        { id: 'SYNC-FIX-001', rule: 'responses survive loss', line: 4, recipes: 1, detected: true },
        { id: 'SYNC-FIX-011', rule: 'checks are enforced', line: 4, recipes: 1, detected: false },
      ],
      results: [
        { id: 'SYNC-FIX-001', rule: 'responses survive loss', fault: 'wire:drop-response', outcome: 'detected', detected: true, detail: 'Then step failed' },
        { id: 'SYNC-FIX-011', rule: 'checks are enforced', fault: 'server:skip-check', outcome: 'missed', detected: false, detail: 'every scenario of the rule still passed under the fault' },
      ],
    },
    outDir,
  });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  });
  page = await browser.newPage({ viewport: { width: 1280, height: 900 }, deviceScaleFactor: 1 });
  page.on('pageerror', (error) => pageErrors.push(error.message));
  page.on('console', (message) => {
    if (message.type() === 'error') pageErrors.push(message.text());
  });
  await page.route('**/*', async (route) => {
    const url = route.request().url();
    if (url.startsWith('file:')) return route.continue();
    foreignRequests.push(url);
    return route.abort();
  });
  await page.goto(pathToFileURL(join(outDir, REPORT_FILES.html)).href);
});

after(async () => {
  await browser?.close();
});

/** The text a person sees in an element (rendered, so hidden parts are left out). */
const shown = async (locator: Locator) => (await locator.allInnerTexts()).join('\n');
const visibleIds = () => page.locator('details.requirement:visible .rid').allTextContents();

describe('conformance.html in a browser', () => {
  test('shows the header facts and the summary counts', async () => {
    await assert.doesNotReject(page.getByRole('heading', { name: 'Synchro protocol 3 conformance' }).waitFor());
    const facts = await shown(page.locator('dl.facts'));
    assert.match(facts, /Server\s+reference reference server/);
    assert.match(facts, /Catalog\s+\S*catalog\.md sha256 [0-9a-f]{64}/);
    const tiles = await page.locator('.tiles .tile').allInnerTexts();
    assert.deepEqual(
      tiles.map((t) => t.replace(/\s+/g, ' ').trim()),
      ['11 requirements', '2 failed', '6 undetermined', '1 not applicable', '2 passed'],
    );
    assert.match(await shown(page.locator('section.sensitivity')), /Rules detected 1 of 2 \(50%\)\. 1 rule is not proven\./);
    assert.equal((await visibleIds()).length, 11);
  });

  test('filters by status, section, profile and text', async () => {
    await page.selectOption('#filter-status', 'failed');
    assert.deepEqual(await visibleIds(), ['SYNC-FIX-003', 'SYNC-FIX-010']);
    assert.equal(await shown(page.locator('#shown')), 'Showing 2 of 11 requirements');

    await page.selectOption('#filter-section', 'Local Metadata Invariants');
    assert.deepEqual(await visibleIds(), ['SYNC-FIX-003']);

    await page.selectOption('#filter-profile', 'server');
    assert.deepEqual(await visibleIds(), []);
    assert.ok(await page.locator('#no-match').isVisible());
    await page.selectOption('#filter-profile', '');

    await page.selectOption('#filter-status', '');
    await page.selectOption('#filter-section', '');
    await page.fill('#filter-text', 'capability');
    assert.deepEqual(await visibleIds(), ['SYNC-FIX-007']);
    await page.fill('#filter-text', '');
    assert.equal((await visibleIds()).length, 11);
  });

  test('opens a failed requirement to its scenarios, steps and failure message, and renders it in colour', async () => {
    await page.selectOption('#filter-status', 'failed');
    await page.selectOption('#filter-section', 'Local Metadata Invariants');
    const requirement = page.locator('details.requirement#SYNC-FIX-003');
    await requirement.locator('summary').click();
    assert.equal(await requirement.getAttribute('open'), '');

    const scenarios = requirement.locator('.scenario h3');
    assert.deepEqual(
      (await scenarios.allInnerTexts()).map((t) => t.replace(/\s+/g, ' ').trim()),
      ['passed a passing check', 'failed a failing check'],
    );
    const failedStep = requirement.locator('.scenario.status-failed li.step-failed');
    assert.ok(await failedStep.isVisible());
    assert.match(await shown(failedStep), /Then the answer is 41/);
    const error = requirement.locator('pre.error');
    assert.ok(await error.isVisible());
    // The message arrives as text, with its angle brackets and quotes intact.
    assert.match(await shown(error), /^Error: expected 42, got 41 <not & "escaped">/);
    assert.ok(await requirement.locator('.scenario.status-failed li.step-skipped', { hasText: 'And the answer is 42' }).isVisible());

    const shot = await requirement.screenshot({ path: join(outDir, 'failed-requirement.png') });
    const box = await requirement.boundingBox();
    assert.ok(box);
    const image = decodePng(shot);
    // Fractional layout positions may add a device pixel at an edge.
    assert.ok(Math.abs(image.width - box.width) <= 2, `screenshot ${image.width}px wide, element ${box.width}px`);
    assert.ok(Math.abs(image.height - box.height) <= 2, `screenshot ${image.height}px tall, element ${box.height}px`);
    assert.ok(image.height > 150, `the opened requirement is ${image.height}px tall`);
    const failedPixels = countColour(image, FAILED_RGB);
    // The left border alone is 6px times the height: a blank or unstyled page has none.
    assert.ok(failedPixels >= 6 * image.height, `found ${failedPixels} pixels of the failed colour`);
  });

  test('stays offline and raises no script error', () => {
    assert.deepEqual(foreignRequests, []);
    assert.deepEqual(pageErrors, []);
  });

  test('junit.xml is well-formed XML to a browser parser', async () => {
    const xml = readFileSync(join(outDir, REPORT_FILES.junit), 'utf8');
    const result = await page.evaluate((text) => {
      // Runs in the page; the project compiles without the DOM library, hence the local types.
      type XmlElement = { getAttribute(name: string): string | null };
      type XmlParser = new () => { parseFromString(text: string, type: string): { getElementsByTagName(name: string): ArrayLike<XmlElement> } };
      const Parser = (globalThis as unknown as { DOMParser: XmlParser }).DOMParser;
      const doc = new Parser().parseFromString(text, 'application/xml');
      return {
        error: doc.getElementsByTagName('parsererror').length,
        suites: doc.getElementsByTagName('testsuite').length,
        cases: doc.getElementsByTagName('testcase').length,
        failures: Array.from(doc.getElementsByTagName('failure'), (f) => f.getAttribute('message') ?? ''),
      };
    }, xml);
    assert.equal(result.error, 0);
    assert.equal(result.suites, 3);
    assert.equal(result.cases, 11);
    assert.ok(result.failures.some((m) => m.includes('expected 42, got 41 <not & "escaped">')), result.failures.join('\n'));
  });
});
