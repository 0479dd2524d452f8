/**
 * Fault switches for the sensitivity run: SYNCHRO_FAULTS lists switch names
 * (without the `client:` prefix). Each switch is one line in the client,
 * marked `// fault: client:<name>`, that breaks exactly one rule; with the
 * variable unset the client behaves correctly.
 */
const enabled = new Set(
  (process.env.SYNCHRO_FAULTS ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean),
);

export function fault(name: string): boolean {
  return enabled.has(`client:${name}`) || enabled.has(name);
}
