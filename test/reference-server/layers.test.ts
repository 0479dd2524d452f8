/**
 * The layers of the reference server (reference/server/core/README.md), read
 * from the import statements of every module under reference/server:
 * core/ imports only core/; a handler folder imports its own folder and
 * core/, never another handler folder; db/ imports nothing else of the
 * server; only the entry points beside app.ts import handlers. No module
 * takes part in an import cycle. A new sideways or upward import fails here.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const SERVER = fileURLToPath(new URL('../../reference/server/', import.meta.url));

/** Folders whose modules serve one part of the protocol or the test surface. */
const HANDLER_FOLDERS = ['capture', 'connect', 'controls', 'pull', 'push', 'rebuild', 'seed'];

/** Imports the rules refuse but that are allowed on purpose, as `from -> to`. There are none. */
const ALLOWED: readonly string[] = [];

type Layer = 'entry' | 'handler' | 'core' | 'db';

/** The layer of a module, by its path below reference/server. */
function layerOf(module: string): { layer: Layer; folder: string } {
  const [folder, ...rest] = module.split('/');
  if (rest.length === 0 || folder === undefined) return { layer: 'entry', folder: '' };
  if (folder === 'core' || folder === 'db') return { layer: folder, folder };
  if (HANDLER_FOLDERS.includes(folder)) return { layer: 'handler', folder };
  throw new Error(`reference/server/${folder}/ is in no layer: add it to HANDLER_FOLDERS in test/reference-server/layers.test.ts and to reference/server/core/README.md, or move it into core/`);
}

/** Why `from` may not import `to` (both below reference/server), or undefined when it may. */
function brokenRule(from: string, to: string): string | undefined {
  const a = layerOf(from);
  const b = layerOf(to);
  switch (a.layer) {
    case 'entry':
      return undefined;
    case 'core':
      return b.layer === 'core' ? undefined : 'core/ imports only core/';
    case 'db':
      return b.layer === 'db' ? undefined : 'db/ imports nothing else of the server';
    case 'handler':
      if (b.layer === 'core' || (b.layer === 'handler' && b.folder === a.folder)) return undefined;
      return b.layer === 'handler' ? 'a handler folder never imports another handler folder' : 'a handler imports only its own folder and core/';
  }
}

const IMPORT_FORMS = [
  // import ... from '...', import type ... from '...', export ... from '...' (also across lines)
  /^\s*(?:import|export)\b[^;'"`]*?\bfrom\s*['"]([^'"]+)['"]/gm,
  // import '...'
  /^\s*import\s*['"]([^'"]+)['"]/gm,
  // import('...')
  /\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/g,
];

/** The module specifiers a source text imports. */
function specifiers(source: string): string[] {
  return IMPORT_FORMS.flatMap((form) => [...source.matchAll(form)].map((m) => m[1] as string));
}

type Graph = Map<string, string[]>;

/** Every module of `root` with the modules of `root` it imports (paths relative to `root`). */
function importGraph(root: string): Graph {
  const graph: Graph = new Map();
  const modules = (readdirSync(root, { recursive: true }) as string[]).filter((p) => p.endsWith('.ts')).sort();
  for (const module of modules) {
    const targets: string[] = [];
    for (const spec of specifiers(readFileSync(join(root, module), 'utf8'))) {
      if (!spec.startsWith('.')) continue;
      const target = relative(root, resolve(root, dirname(module), spec));
      if (!target.startsWith('..')) targets.push(target.split('\\').join('/'));
    }
    graph.set(module.split('\\').join('/'), targets);
  }
  return graph;
}

/** Every import against the layers, as `from -> to (rule)`. */
function violations(graph: Graph): string[] {
  const out: string[] = [];
  for (const [from, targets] of graph) {
    for (const to of targets) {
      const rule = brokenRule(from, to);
      if (rule !== undefined && !ALLOWED.includes(`${from} -> ${to}`)) out.push(`${from} -> ${to} (${rule})`);
    }
  }
  return out;
}

/** The import cycles of a graph: each strongly connected set of more than one module, or a module importing itself. */
function cycles(graph: Graph): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string) => {
    index.set(v, index.size);
    low.set(v, index.get(v) as number);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) as number, low.get(w) as number));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v) as number, index.get(w) as number));
      }
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop() as string;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1 || (graph.get(v) ?? []).includes(v)) out.push(component.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return out;
}

const graph = importGraph(SERVER);

test('the import reader sees every form of import the server uses', () => {
  const source = [
    "import type { Pool } from 'pg';",
    "import { a,",
    "  type B,",
    "} from './core/a.ts';",
    "export { c } from '../core/c.ts';",
    "import './side-effect.ts';",
    "const m = await import('./lazy.ts');",
    " * import { not } from './a-comment.ts';",
    "const sql = `SELECT x FROM t WHERE y = 'from'`;",
  ].join('\n');
  assert.deepEqual(specifiers(source).sort(), ['../core/c.ts', './core/a.ts', './lazy.ts', './side-effect.ts', 'pg']);
});

test('the graph covers the whole server, handlers seen from the router and core seen from the handlers', () => {
  assert.ok(graph.size > 50, `only ${graph.size} modules read under ${SERVER}`);
  for (const handler of ['connect/handler.ts', 'push/handler.ts', 'pull/handler.ts', 'rebuild/handler.ts']) {
    assert.ok(graph.get('router.ts')?.includes(handler), `router.ts does not import ${handler}`);
  }
  assert.ok(graph.get('pull/handler.ts')?.includes('core/assignment.ts'));
  assert.ok(graph.get('connect/bridge.ts')?.includes('core/snapshot.ts'));
  // Every module is in a layer (layerOf throws for a folder no rule covers).
  for (const module of graph.keys()) layerOf(module);
});

test('the rules refuse upward and sideways imports and allow downward ones', () => {
  assert.equal(brokenRule('router.ts', 'pull/handler.ts'), undefined);
  assert.equal(brokenRule('pull/handler.ts', 'core/cursor.ts'), undefined);
  assert.equal(brokenRule('pull/handler.ts', 'pull/changes.ts'), undefined);
  assert.equal(brokenRule('core/cursor.ts', 'core/position.ts'), undefined);
  assert.match(brokenRule('core/cursor.ts', 'pull/changes.ts') ?? '', /core\/ imports only core/);
  assert.match(brokenRule('core/errors.ts', 'router.ts') ?? '', /core\/ imports only core/);
  assert.match(brokenRule('connect/bridge.ts', 'pull/handler.ts') ?? '', /never imports another handler folder/);
  assert.match(brokenRule('capture/materialize.ts', 'push/units.ts') ?? '', /never imports another handler folder/);
  assert.match(brokenRule('controls/routes.ts', 'app.ts') ?? '', /only its own folder and core/);
  assert.match(brokenRule('db/install.ts', 'core/errors.ts') ?? '', /db\/ imports nothing else/);
  assert.throws(() => layerOf('http/server.ts'), /in no layer/);
  const sample: Graph = new Map([
    ['core/a.ts', ['core/b.ts', 'seed/x.ts']],
    ['core/b.ts', []],
    ['seed/x.ts', ['seed/y.ts', 'pull/z.ts']],
    ['seed/y.ts', ['seed/x.ts']],
    ['pull/z.ts', ['pull/z.ts']],
  ]);
  assert.deepEqual(violations(sample), [
    'core/a.ts -> seed/x.ts (core/ imports only core/)',
    'seed/x.ts -> pull/z.ts (a handler folder never imports another handler folder)',
  ]);
  assert.deepEqual(cycles(sample).sort(), [['pull/z.ts'], ['seed/x.ts', 'seed/y.ts']]);
});

test('no module of reference/server imports against the layers', () => {
  assert.deepEqual(violations(graph), []);
});

test('every allowed exception is a real import the rules refuse', () => {
  for (const edge of ALLOWED) {
    const [from, to] = edge.split(' -> ') as [string, string];
    assert.ok(graph.get(from)?.includes(to), `${edge} is allowed but no longer imported: remove it from ALLOWED`);
    assert.notEqual(brokenRule(from, to), undefined, `${edge} is allowed but breaks no rule: remove it from ALLOWED`);
  }
});

test('no module of reference/server takes part in an import cycle', () => {
  assert.deepEqual(cycles(graph), []);
});
