// -o table|json|yaml: one value printed the way the operator asked (the table is the
// command's own rendering, for people; json and yaml the same value, for tools).
import { dump } from 'js-yaml';
import type { OutputFormat } from './command-options.js';

export function formatOutput(format: OutputFormat, value: unknown, table: () => string): string {
  if (format === 'json') return JSON.stringify(value, null, 2);
  if (format === 'yaml') return dump(value, { noRefs: true, lineWidth: -1 }).trimEnd();
  return table();
}
