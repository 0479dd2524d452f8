/**
 * Reads an invariant catalog: the markdown file of the seeds folder, or an
 * upstream `.mdx` page with the same structure.
 *
 * Level-two headings are sections, level-three headings are invariants. Each
 * invariant keeps the text under it (up to the next heading of level three or
 * higher) and a SHA-256 of that text, so `catalog diff` can tell a rename (same
 * body, new title) from a change of substance (new body).
 *
 * Only what CommonMark would render as a heading counts: ATX headings outside
 * fenced code and outside front matter. A fence is closed only by a line of the
 * same character at least as long as the opening one, so a three-backtick line
 * inside a four-backtick block stays code.
 */

import { isUtf8 } from 'node:buffer';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { InputError } from '../errors.ts';
import { Slugger } from './slug.ts';

export interface Heading {
  level: number;
  /** Heading text as a reader sees it (inline markup removed). */
  text: string;
  anchor: string;
  /** 1-based line number in the catalog file. */
  line: number;
}

export interface Invariant {
  title: string;
  anchor: string;
  line: number;
  /** Title of the enclosing level-two heading, or undefined before the first one. */
  section: string | undefined;
  body: string;
  bodySha256: string;
}

export interface Section {
  title: string;
  anchor: string;
  line: number;
  invariants: Invariant[];
}

export interface Catalog {
  file: string;
  /** SHA-256 of the catalog file's bytes, as reports carry it. */
  sha256: string;
  headings: Heading[];
  sections: Section[];
  invariants: Invariant[];
}

const ATX_HEADING = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$/;
const CLOSING_HASHES = /(?:^|[ \t]+)#+[ \t]*$/;
const FENCE_OPEN = /^ {0,3}(`{3,}|~{3,})(.*)$/;

export function sha256Hex(data: string | Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

/** Removes the inline markup a rendered heading would not show. */
function plainText(raw: string): string {
  return raw
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/`+/g, '')
    .replace(/\*+/g, '')
    .trim();
}

/** Number of leading lines that belong to YAML front matter (0 when there is none). */
function frontMatterLength(lines: string[], file: string): number {
  if (lines[0]?.trimEnd() !== '---') return 0;
  for (let i = 1; i < lines.length; i += 1) {
    const line = lines[i]?.trimEnd();
    if (line === '---' || line === '...') return i + 1;
  }
  throw new InputError(file, 1, 'front matter opened on line 1 is never closed', "end the front matter with a line '---'");
}

interface Fence {
  char: string;
  length: number;
}

function opensFence(line: string): Fence | undefined {
  const match = FENCE_OPEN.exec(line);
  if (!match) return undefined;
  const marker = match[1] ?? '';
  const info = match[2] ?? '';
  // A backtick fence's info string may not contain a backtick (CommonMark 4.5).
  if (marker.startsWith('`') && info.includes('`')) return undefined;
  return { char: marker.charAt(0), length: marker.length };
}

function closesFence(line: string, fence: Fence): boolean {
  const match = /^ {0,3}(`+|~+)[ \t]*$/.exec(line);
  const marker = match?.[1];
  return marker !== undefined && marker.charAt(0) === fence.char && marker.length >= fence.length;
}

function headingOf(line: string): { level: number; raw: string } | undefined {
  const match = ATX_HEADING.exec(line);
  if (!match) return undefined;
  const raw = (match[2] ?? '').replace(CLOSING_HASHES, '');
  return { level: (match[1] ?? '').length, raw };
}

function trimBlankLines(lines: string[]): string {
  let start = 0;
  let end = lines.length;
  while (start < end && lines[start]?.trim() === '') start += 1;
  while (end > start && lines[end - 1]?.trim() === '') end -= 1;
  return lines.slice(start, end).join('\n');
}

export function parseCatalog(text: string, file: string): Catalog {
  const lines = text.replace(/^\uFEFF/, '').replace(/\r\n?/g, '\n').split('\n');
  const slugger = new Slugger();
  const headings: Heading[] = [];
  const sections: Section[] = [];
  const invariants: Invariant[] = [];
  // Body lines of the invariant being read, if any.
  let open: { invariant: Omit<Invariant, 'body' | 'bodySha256'>; body: string[] } | undefined;
  let fence: Fence | undefined;

  const closeInvariant = (): void => {
    if (!open) return;
    const body = trimBlankLines(open.body);
    invariants.push({ ...open.invariant, body, bodySha256: sha256Hex(body) });
    sections.at(-1)?.invariants.push(invariants.at(-1) as Invariant);
    open = undefined;
  };

  for (let index = frontMatterLength(lines, file); index < lines.length; index += 1) {
    const line = lines[index] ?? '';
    const lineNumber = index + 1;
    if (fence) {
      if (closesFence(line, fence)) fence = undefined;
      open?.body.push(line);
      continue;
    }
    const opening = opensFence(line);
    if (opening) {
      fence = opening;
      open?.body.push(line);
      continue;
    }
    const heading = headingOf(line);
    if (!heading) {
      open?.body.push(line);
      continue;
    }
    const text = plainText(heading.raw);
    const anchor = slugger.slug(text);
    headings.push({ level: heading.level, text, anchor, line: lineNumber });
    if (heading.level > 3) {
      open?.body.push(line);
      continue;
    }
    closeInvariant();
    if (heading.level === 2) {
      sections.push({ title: text, anchor, line: lineNumber, invariants: [] });
    } else if (heading.level === 3) {
      const section = sections.at(-1)?.title;
      open = { invariant: { title: text, anchor, line: lineNumber, section }, body: [] };
    }
  }
  closeInvariant();
  return { file, sha256: sha256Hex(text), headings, sections, invariants };
}

/** Reads and parses a catalog file; an unreadable or non-UTF-8 file is an InputError. */
export function readCatalog(file: string): Catalog {
  let bytes: Buffer;
  try {
    bytes = readFileSync(file);
  } catch (error) {
    throw new InputError(file, undefined, `cannot read the catalog (${(error as Error).message})`, 'pass the path of an invariant catalog markdown file');
  }
  if (!isUtf8(bytes)) {
    throw new InputError(file, firstNonUtf8Line(bytes), 'the catalog is not valid UTF-8', 'save the file as UTF-8');
  }
  return { ...parseCatalog(bytes.toString('utf8'), file), sha256: sha256Hex(bytes) };
}

function firstNonUtf8Line(bytes: Buffer): number {
  let start = 0;
  for (let line = 1; ; line += 1) {
    const end = bytes.indexOf(0x0a, start);
    if (!isUtf8(bytes.subarray(start, end === -1 ? bytes.length : end))) return line;
    if (end === -1) return line;
    start = end + 1;
  }
}
