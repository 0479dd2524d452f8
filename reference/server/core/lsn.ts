/** PostgreSQL LSNs as bigints, and back to their `X/XXXXXXXX` text. */
export function parseLsn(text: string): bigint {
  const m = /^([0-9A-Fa-f]{1,8})\/([0-9A-Fa-f]{1,8})$/.exec(text);
  if (m === null) throw new Error('not an LSN');
  return (BigInt(`0x${m[1]}`) << 32n) | BigInt(`0x${m[2]}`);
}

export function formatLsn(lsn: bigint): string {
  const hi = (lsn >> 32n).toString(16).toUpperCase();
  const lo = (lsn & 0xffffffffn).toString(16).toUpperCase().padStart(8, '0');
  return `${hi}/${lo}`;
}
