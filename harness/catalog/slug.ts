/**
 * GitHub-compatible heading anchors.
 *
 * GitHub lowercases the heading text, drops punctuation (anything that is not a
 * letter, mark, number, connector punctuation, hyphen or space), turns each
 * remaining space into a hyphen, and disambiguates repeats across the whole
 * document by appending `-1`, `-2`, ... in document order. Each space becomes
 * its own hyphen, as on GitHub: "A & B" is `a--b`, so anchors we derive
 * resolve on the rendered page (see docs/decisions.md).
 */

const PUNCTUATION = /[^\p{L}\p{M}\p{N}\p{Pc}\- \t]/gu;

/** The anchor GitHub derives from one heading text, before disambiguation. */
export function baseSlug(heading: string): string {
  return heading.trim().toLowerCase().replace(PUNCTUATION, '').replace(/[ \t]/g, '-');
}

/**
 * Hands out unique anchors for the headings of one document, in order.
 * A slug already handed out (including one produced by an earlier suffix)
 * gets the next free `-N`.
 */
export class Slugger {
  private readonly seen = new Map<string, number>();

  slug(heading: string): string {
    const base = baseSlug(heading);
    let candidate = base;
    let count = this.seen.get(base) ?? 0;
    while (this.seen.has(candidate)) {
      count += 1;
      candidate = `${base}-${count}`;
    }
    this.seen.set(base, count);
    // A suffixed slug is itself taken now, so a later heading whose text
    // happens to be "<base> 1" moves on to its own suffix.
    if (candidate !== base) this.seen.set(candidate, 0);
    return candidate;
  }
}
