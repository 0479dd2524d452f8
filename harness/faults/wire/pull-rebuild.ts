/**
 * Wire faults of the pull, cursor and rebuild section (requirements worked
 * on in the pull-rebuild worktree): answers rewritten as a server that gets
 * the terminal pull page or rebuild continuation wrong would send them.
 */
import { type FaultDefinition, wire } from './define.ts';

export const PULL_REBUILD_WIRE_FAULTS: readonly FaultDefinition[] = [
  // A server that builds checksums only while it has changes to report: a quiet terminal page goes out without its map.
  wire('pull017-no-checksums-on-quiet-terminal-page', [
    {
      endpoint: 'pull',
      times: Number.POSITIVE_INFINITY,
      fault: {
        kind: 'rewrite',
        describe: 'the checksums of a terminal pull page with no change left out',
        // biome-ignore lint/suspicious/noExplicitAny: a transform edits the parsed body member by member
        transform: (json: any) => {
          if (json?.has_more !== false || !Array.isArray(json.changes) || json.changes.length > 0) return undefined;
          delete json.checksums;
          return json;
        },
      },
    },
  ]),
  // A server that fills a page to its limit and then drops the last candidate it could not fit, while its cursor passes it.
  wire('pull004-last-candidate-left-out', [
    {
      endpoint: 'pull',
      times: Number.POSITIVE_INFINITY,
      fault: {
        kind: 'rewrite',
        describe: 'the last change of a pull page with more to come left out',
        // biome-ignore lint/suspicious/noExplicitAny: a transform edits the parsed body member by member
        transform: (json: any) => {
          if (json?.has_more !== true || !Array.isArray(json.changes) || json.changes.length === 0) return undefined;
          json.changes.pop();
          return json;
        },
      },
    },
  ]),
];
