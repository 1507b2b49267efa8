// The runbook's anchors: each alarm has a row in docs/operations.md under `alarm-<name>`, which a
// runbookUrl (a copy of that page, or a wiki page with the same anchors) is linked at.

/** The anchor of an alarm's row in docs/operations.md. */
export const runbookAnchor = (alarmId: string): string => `alarm-${alarmId.toLowerCase()}`;
