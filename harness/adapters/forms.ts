/**
 * Implementation forms: what an implementation is built as, where the catalog
 * has requirements that only have a subject for one form (how a pgrx
 * extension is authored, how a PostgreSQL extension is upgraded, how thin a
 * React Native binding stays).
 *
 * An adapter config declares the forms of its implementation (`forms`); a
 * feature or scenario tagged `@form:<name>` applies only to an implementation
 * that declares that form. For any other it is reported not-applicable with
 * the form named, whether or not its steps exist, and the release gate does
 * not count it (harness/report/gate.ts): such a requirement is outside the
 * implementation, not a gap in what was shown of it. A form is a statement
 * about the implementation and is never discovered: an implementation that
 * declares one is then held to every requirement of that form.
 */

/** Forms of a server implementation. */
export const SERVER_FORMS = ['postgresql-extension', 'pgrx-extension'] as const;
/** Forms of a client implementation. */
export const CLIENT_FORMS = ['react-native-binding'] as const;

export type ServerForm = (typeof SERVER_FORMS)[number];
export type ClientForm = (typeof CLIENT_FORMS)[number];
export type ImplementationForm = ServerForm | ClientForm;

/** What each form means, worded to follow "an implementation" in reasons. */
export const FORM_MEANING: Record<ImplementationForm, string> = {
  'postgresql-extension': 'shipped as a PostgreSQL extension (control file, versioned install and update scripts)',
  'pgrx-extension': 'built as a PostgreSQL extension with pgrx from Rust source',
  'react-native-binding': 'that is a React Native binding over a native client',
};

/**
 * Not-applicable evidence names a missing capability; a missing form is named
 * with this prefix in the same place, so the report and the gate can tell
 * "outside this implementation" from "a control the adapter lacks".
 */
export const FORM_EVIDENCE_PREFIX = 'form:';

const FORM_TAG = /^@form:(.+)$/;

export function formRole(form: ImplementationForm): 'server' | 'client' {
  return (CLIENT_FORMS as readonly string[]).includes(form) ? 'client' : 'server';
}

/** The forms a scenario's tags ask for; unknown names are returned separately. */
export function requiredForms(tags: readonly string[]): { known: ImplementationForm[]; unknown: string[] } {
  const known: ImplementationForm[] = [];
  const unknown: string[] = [];
  for (const tag of tags) {
    const name = FORM_TAG.exec(tag)?.[1];
    if (name === undefined) continue;
    if ((SERVER_FORMS as readonly string[]).includes(name) || (CLIENT_FORMS as readonly string[]).includes(name)) known.push(name as ImplementationForm);
    else unknown.push(name);
  }
  return { known, unknown };
}

/** Whether a not-applicable scenario's named capabilities are all undeclared forms. */
export function onlyForms(capabilities: readonly string[]): boolean {
  return capabilities.length > 0 && capabilities.every((name) => name.startsWith(FORM_EVIDENCE_PREFIX));
}
