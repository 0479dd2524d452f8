/**
 * A client under test carrying out the server's schema action: what it
 * installed, which requests it sent during a sync, how it stops on
 * unsupported and how its explicit reset looks on the wire.
 */

export interface Inspected {
  schema: { version: number; hash: string } | null;
  clientGeneration: number | null;
}
