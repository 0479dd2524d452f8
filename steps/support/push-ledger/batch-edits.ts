/**
 * A sent push request changed on purpose before it goes out again: the same
 * content spelled differently (members reversed, wider spacing), or one
 * change a feature names in words, which gives the request another
 * fingerprint under the same batch_id.
 */
import type { Json, WireClient } from '../wire-client.ts';

/** The same JSON value with every object's members in reverse order and two spaces after each `,` and `:`. */
export function reorderedAndRespaced(text: string): string {
  const write = (value: unknown): string => {
    if (Array.isArray(value)) return `[${value.map(write).join(',  ')}]`;
    if (value !== null && typeof value === 'object') {
      const members = Object.entries(value as Record<string, unknown>).reverse();
      return `{${members.map(([k, v]) => `${JSON.stringify(k)}:  ${write(v)}`).join(',  ')}}`;
    }
    return JSON.stringify(value);
  };
  return write(JSON.parse(text));
}

const ORDINAL: Record<string, number> = { first: 0, second: 1 };

function mutationAt(body: Json, ordinal: string): Json {
  const mutation = (body.mutations as Json[])[ORDINAL[ordinal] ?? -1];
  if (mutation === undefined) throw new Error(`the batch has no ${ordinal} mutation`);
  return mutation;
}

type Edit = (body: Json, match: RegExpExecArray, field: (mutation: Json, column: string) => string) => void;

/** Each change a feature can name, by its wording. */
const EDITS: Array<[RegExp, Edit]> = [
  [
    /^body "(.*)" instead of "(.*)" in the (first|second) mutation$/,
    (body, m, field) => {
      const mutation = mutationAt(body, m[3] as string);
      const columns = mutation.columns as Json;
      const id = field(mutation, 'body');
      if (columns[id] !== m[2]) throw new Error(`the ${m[3]} mutation has body ${JSON.stringify(columns[id])}, not "${m[2]}"`);
      columns[id] = m[1];
    },
  ],
  [
    // Without "in the ... mutation": the one mutation of the batch that holds that column value.
    /^(\w+) "(.*)" instead of "(.*)"$/,
    (body, m, field) => {
      const holding = (body.mutations as Json[]).filter((mutation) => (mutation.columns as Json | undefined)?.[field(mutation, m[1] as string)] === m[3]);
      if (holding.length !== 1) throw new Error(`${holding.length} mutations of the batch have ${m[1]} "${m[3]}", not one`);
      const mutation = holding[0] as Json;
      (mutation.columns as Json)[field(mutation, m[1] as string)] = m[2];
    },
  ],
  [
    /^the two mutations in reverse order$/,
    (body) => {
      const mutations = body.mutations as Json[];
      if (mutations.length !== 2) throw new Error(`the batch has ${mutations.length} mutations, not two`);
      mutations.reverse();
    },
  ],
  [
    /^the added envelope member "atomic": true$/,
    (body) => {
      body.atomic = true;
    },
  ],
  [
    /^a request schema hash of 64 "([0-9a-f])" characters$/,
    (body, m) => {
      body.schema = { ...(body.schema as Json), hash: (m[1] as string).repeat(64) };
    },
  ],
  [
    /^client_generation one higher than the stored one$/,
    (body) => {
      body.client_generation = Number(body.client_generation) + 1;
    },
  ],
  [
    /^client_version "(.*)" in the (first|second) mutation$/,
    (body, m) => {
      mutationAt(body, m[2] as string).client_version = m[1];
    },
  ],
  [
    /^"(\w+)": null added to the columns of the (first|second) mutation$/,
    (body, m, field) => {
      const mutation = mutationAt(body, m[2] as string);
      const id = field(mutation, m[1] as string);
      const columns = mutation.columns as Json;
      if (Object.hasOwn(columns, id)) throw new Error(`the ${m[2]} mutation already has column ${m[1]}`);
      columns[id] = null;
    },
  ],
  [
    /^base_version "(.*)" in the (first|second) mutation$/,
    (body, m) => {
      mutationAt(body, m[2] as string).base_version = m[1];
    },
  ],
];

/** The request `text` with the one `change` a feature names applied. */
export function editedBatch(client: WireClient, text: string, change: string): Json {
  const body = JSON.parse(text) as Json;
  const field = (mutation: Json, column: string) => client.fieldId(String(mutation.table), column);
  for (const [pattern, edit] of EDITS) {
    const match = pattern.exec(change);
    if (match === null) continue;
    edit(body, match, field);
    return body;
  }
  throw new Error(`no known change of a batch reads "${change}"`);
}

type MutationEdit = (mutation: Json, match: RegExpExecArray, field: (column: string) => string, label: (name: string) => string) => void;

/** Each change of one mutation a feature can name, by its wording. */
const MUTATION_EDITS: Array<[RegExp, MutationEdit]> = [
  [
    /^body "(.*)" instead of "(.*)"$/,
    (mutation, m, field) => {
      const columns = mutation.columns as Json;
      if (columns[field('body')] !== m[2]) throw new Error(`the mutation has body ${JSON.stringify(columns[field('body')])}, not "${m[2]}"`);
      columns[field('body')] = m[1];
    },
  ],
  [
    /^client_version "(.*)"$/,
    (mutation, m) => {
      mutation.client_version = m[1];
    },
  ],
  [
    /^the added column "(\w+)" with value null$/,
    (mutation, m, field) => {
      const columns = mutation.columns as Json;
      if (Object.hasOwn(columns, field(m[1] as string))) throw new Error(`the mutation already has column ${m[1]}`);
      columns[field(m[1] as string)] = null;
    },
  ],
  [
    /^base_version "(.*)" instead of the remembered "(\w+)"$/,
    (mutation, m, _field, label) => {
      if (mutation.base_version !== label(m[2] as string)) throw new Error(`the mutation was sent from base ${String(mutation.base_version)}, not ${m[2]}`);
      mutation.base_version = m[1];
    },
  ],
  [
    /^operation "delete" without columns$/,
    (mutation) => {
      mutation.op = 'delete';
      delete mutation.columns;
    },
  ],
];

/** A copy of a mutation as first sent, with the one `change` a feature names applied. */
export function editedMutation(client: WireClient, sent: Json, change: string, label: (name: string) => string): Json {
  const mutation = structuredClone(sent);
  const field = (column: string) => client.fieldId(String(mutation.table), column);
  for (const [pattern, edit] of MUTATION_EDITS) {
    const match = pattern.exec(change);
    if (match === null) continue;
    edit(mutation, match, field, label);
    return mutation;
  }
  throw new Error(`no known change of a mutation reads "${change}"`);
}
