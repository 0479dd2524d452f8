/**
 * Named fault switches for the sensitivity run. SYNCHRO_FAULTS lists the
 * enabled names; each switch in the code is one line marked
 * `// fault: server:<name>` beside the behaviour it breaks.
 */
const enabled = new Set(
  (process.env.SYNCHRO_FAULTS ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== ''),
);

export function fault(name: string): boolean {
  return enabled.has(`server:${name}`) || enabled.has(name);
}
