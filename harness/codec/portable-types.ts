/**
 * The eleven portable types and their one-octet tags. Names are matched
 * exactly: aliases (`integer`, `text`, `uuid`), other casing and database type
 * names are refused, never mapped.
 */
import { CodecError } from './errors.ts';

export const PORTABLE_TYPES = [
  'string',
  'int',
  'int64',
  'decimal',
  'float',
  'boolean',
  'datetime',
  'date',
  'time',
  'json',
  'bytes',
] as const;

export type PortableType = (typeof PORTABLE_TYPES)[number];

/** Only these may type a primary key. */
export const KEY_TYPES = ['string', 'int', 'int64'] as const;
export type KeyType = (typeof KEY_TYPES)[number];

export const TYPE_TAGS: Readonly<Record<PortableType, number>> = {
  string: 0x01,
  int: 0x02,
  int64: 0x03,
  decimal: 0x04,
  float: 0x05,
  boolean: 0x06,
  datetime: 0x07,
  date: 0x08,
  time: 0x09,
  json: 0x0a,
  bytes: 0x0b,
};

export function isPortableType(name: unknown): name is PortableType {
  return typeof name === 'string' && (PORTABLE_TYPES as readonly string[]).includes(name);
}

export function isKeyType(name: unknown): name is KeyType {
  return typeof name === 'string' && (KEY_TYPES as readonly string[]).includes(name);
}

export function parsePortableType(name: unknown, path = ''): PortableType {
  if (!isPortableType(name)) {
    throw new CodecError('unknown_type', path, `${JSON.stringify(name)} is not one of the eleven portable type names`);
  }
  return name;
}

/** Reverse lookup used when decoding row identities. */
export function typeOfTag(tag: number): PortableType | undefined {
  return PORTABLE_TYPES.find((t) => TYPE_TAGS[t] === tag);
}
