/** A failure that quarantines the transaction, with a bounded class and no row data. */
export class CaptureFailure extends Error {
  readonly failureClass: string;
  readonly tableId: string | null;
  constructor(failureClass: string, detail: string, tableId: string | null = null) {
    super(detail);
    this.failureClass = failureClass;
    this.tableId = tableId;
  }
}
