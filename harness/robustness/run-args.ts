/**
 * `run --profile robustness` hands its arguments to the fuzz command; this
 * small module lets run/command.ts find out without loading the profile.
 */

/** The arguments for the fuzz command, or undefined when the profile asked for is another one. */
export function fromRunArgs(args: readonly string[]): string[] | undefined {
  const at = args.findIndex((a, i) => (a === '--profile' && args[i + 1] === 'robustness') || a === '--profile=robustness');
  if (at < 0) return undefined;
  return [...args.slice(0, at), ...args.slice(at + (args[at] === '--profile' ? 2 : 1))];
}
