#!/usr/bin/env node
// Entry point of the installed command. Node 22.18+ and 24 run the TypeScript
// sources directly (type stripping), so there is no build step.
const major = Number(process.versions.node.split('.')[0]);
if (major < 22) {
  console.error(`synchro-conformance needs Node.js 22 or newer; this is ${process.version}.`);
  process.exit(2);
}
const { runFromCommandLine } = await import('../harness/cli.ts');
await runFromCommandLine(process.argv.slice(2));
