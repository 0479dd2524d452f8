/**
 * The seed of a generated workload (fast-check draws). Every step that draws
 * cases prints its seed on failure; setting SYNCHRO_SEED to that number
 * replays exactly the same cases, so a failure found once can be chased.
 */
export function generatedSeed(): number {
  const replay = process.env.SYNCHRO_SEED;
  if (replay !== undefined && replay !== '') {
    const seed = Number(replay);
    if (!Number.isInteger(seed)) throw new Error(`SYNCHRO_SEED must be a whole number, not "${replay}"`);
    return seed;
  }
  return Math.floor(Math.random() * 2 ** 31);
}
