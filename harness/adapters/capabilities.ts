/**
 * What an adapter can do beyond the black-box wire.
 *
 * A scenario that needs a control names it with a `@cap:<name>` tag. An
 * adapter that does not declare the capability gets the scenario reported
 * not-applicable with the reason, never passed and never silently skipped.
 */

/**
 * Server-side controls (architecture: "Adapters"), plus `seed`: exporting a
 * portable seed and driving the seed SQL functions, which the seed invariants
 * need and no other group covers.
 */
export const SERVER_CAPABILITIES = ['provision', 'sourceSql', 'scopes', 'schema', 'capture', 'clock', 'clients', 'compaction', 'logs', 'inspect', 'seed'] as const;
/**
 * Client-process controls: `crash` for real kills, restarts and named crash
 * points; `reactNative` for driving a React Native binding beside the native
 * client it wraps.
 */
export const CLIENT_CAPABILITIES = ['crash', 'reactNative'] as const;

export type ServerCapability = (typeof SERVER_CAPABILITIES)[number];
export type ClientCapability = (typeof CLIENT_CAPABILITIES)[number];
export type Capability = ServerCapability | ClientCapability;

export const ALL_CAPABILITIES: readonly Capability[] = [...SERVER_CAPABILITIES, ...CLIENT_CAPABILITIES];

const CAPABILITY_TAG = /^@cap:(.+)$/;

export function isCapability(name: string): name is Capability {
  return (ALL_CAPABILITIES as readonly string[]).includes(name);
}

/** The capabilities a scenario's tags ask for; unknown names are returned separately. */
export function requiredCapabilities(tags: readonly string[]): { known: Capability[]; unknown: string[] } {
  const known: Capability[] = [];
  const unknown: string[] = [];
  for (const tag of tags) {
    const name = CAPABILITY_TAG.exec(tag)?.[1];
    if (name === undefined) continue;
    if (isCapability(name)) known.push(name);
    else unknown.push(name);
  }
  return { known, unknown };
}
