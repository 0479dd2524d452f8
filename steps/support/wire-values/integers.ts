/**
 * Envelope integers as they are spelled on the wire: integer tokens (no
 * fraction, no exponent) inside the portable range, and inside the narrower
 * range a member declares. Row values (where a float may have a fraction and
 * an int64 travels as a string) are not envelope members.
 */

export const INTEGER_TOKEN = /^-?(?:0|[1-9][0-9]*)$/;
