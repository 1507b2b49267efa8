// The demo's output as the docs quote it, and how a quote is kept true. The demo keeps what it
// printed from the node group on (its transcript, demo/out/<scenario>.txt); the docs quote a real
// transcript in a block marked with the command that printed it:
//
//   <!-- demo-output: npm run demo -- --observe -->
//   ```
//   ...the transcript...
//   ```
//
// `npm run demo -- --check-docs` (what CI runs) compares its own transcript with the block for
// its command, line shape by line shape: times, instance ids, pod name suffixes, dates and
// numbers are not compared (a run never repeats them), what happened and the words it is told in
// are. A shape the docs show that the run did not print, or one the run printed that the docs do
// not show, fails the run, with the lines to look at; `--write-docs` puts the fresh transcript in
// the block instead. test/unit/demo/transcript.test.ts checks that every block is one CI checks.
import { readFileSync, writeFileSync } from 'node:fs';

/** The docs that quote a demo's output, by the command that printed it. */
export const quotedIn: Readonly<Record<string, string>> = {
  'npm run demo': 'docs/how-it-works.md',
  'npm run demo -- --observe': 'docs/observe-mode.md',
};

const marker = (command: string) => `<!-- demo-output: ${command} -->`;

/** The commands whose output a Markdown text quotes, in order. */
export function quotedCommands(markdown: string): string[] {
  return [...markdown.matchAll(/<!-- demo-output: (.+?) -->/g)].map((m) => m[1]!);
}

/** Where the block quoting `command` is: its first and last line (the fences excluded), or undefined. */
function blockRange(lines: readonly string[], command: string): { from: number; to: number } | undefined {
  const at = lines.indexOf(marker(command));
  if (at === -1 || !(lines[at + 1] ?? '').startsWith('```')) return undefined;
  const end = lines.findIndex((line, i) => i > at + 1 && /^```\s*$/.test(line));
  return end === -1 ? undefined : { from: at + 2, to: end - 1 };
}

/** The block quoting `command`'s output, or undefined. */
export function quotedBlock(markdown: string, command: string): string | undefined {
  const lines = markdown.split('\n');
  const range = blockRange(lines, command);
  return range && lines.slice(range.from, range.to + 1).join('\n');
}

/** The markdown with the block quoting `command` replaced by `transcript`. */
export function withQuote(markdown: string, command: string, transcript: string): string {
  const lines = markdown.split('\n');
  const range = blockRange(lines, command);
  if (range === undefined) throw new Error(`no block marked ${marker(command)} followed by a fenced block`);
  return [...lines.slice(0, range.from), ...transcript.split('\n'), ...lines.slice(range.to + 1)].join('\n');
}

/**
 * A line's shape: what the line says without what never repeats. Seconds (`[demo 4.3s]`,
 * `+ 13.22s`, Event ages), instance ids, the random part of pod names, dates, and every other
 * number (counts, node numbers) become placeholders; runs of spaces (table columns) become one.
 */
export function shapeOf(line: string): string {
  return (
    line
      .replace(/^\[demo\s+[\d.]+s\]/, '[demo <s>]')
      .replace(/^\s*\+\s*[\d.]+s\s/, '+<s> ')
      .replace(/\bi-[0-9a-f]{8,17}\b/g, '<instance>')
      .replace(/\d{4}-\d\d-\d\dT[\d:.]+Z/g, '<time>')
      // namespace/name of a ReplicaSet's pod (name-hash-xxxxx) or a DaemonSet's or Job's (name-xxxxx).
      .replace(/\b([a-z0-9-]+)\/([a-z0-9-]+?)(?:-[a-z0-9]{8,10})?-[a-z0-9]{5}(?![a-z0-9-])/g, '$1/$2-<pod>')
      .replace(/\d+(\.\d+)?/g, '<n>')
      // How many pods of a Deployment the scheduler put on the node: a list of them is one
      // item, and a count of anything is <n> things.
      .replace(/([\w./-]+-<pod>)(, \1)+/g, '$1')
      .replace(/(<n> (?:[a-z]+ )?[a-z]+?)s\b/g, '$1')
      .replace(/\s+/g, ' ')
      .trim()
  );
}

/**
 * Shapes a run prints or not by a race, not by the code: whether an eviction reaches the API
 * before the disruption controller has counted the last replacement Ready decides whether a
 * budget refuses it once (the timeline's PDB wait, the EvictionBlocked Event); whether the node
 * controller has registered the node before the short observe run reads its Events decides
 * whether RegisteredNode is among them. Neither the quote nor the run needs them; both may have them.
 */
export const racyShapes: readonly RegExp[] = [
  /^\+<s> handler PDB wait /,
  /^Warning EvictionBlocked /,
  /^Normal RegisteredNode <n>s node-controller /,
];

/** The distinct shapes of a transcript, sorted, racy ones left out. */
export function shapes(transcript: string): string[] {
  const all = transcript.split('\n').map(shapeOf);
  return [...new Set(all.filter((s) => s !== '' && !racyShapes.some((r) => r.test(s))))].sort();
}

/** What differs between the quoted block and a fresh transcript, shape by shape; empty when they agree. */
export function differences(quoted: string, fresh: string): { onlyQuoted: string[]; onlyFresh: string[] } {
  const q = new Set(shapes(quoted));
  const f = new Set(shapes(fresh));
  return { onlyQuoted: [...q].filter((s) => !f.has(s)), onlyFresh: [...f].filter((s) => !q.has(s)) };
}

/**
 * Checks (or, with `write`, rewrites) the docs' quote of `command` against this run's
 * transcript. Returns the lines to print and whether the quote holds.
 */
export function checkQuote(
  root: string,
  command: string,
  transcript: string,
  write: boolean,
): { ok: boolean; report: string[] } {
  const doc = quotedIn[command];
  if (doc === undefined)
    return {
      ok: false,
      report: [`no docs quote the output of "${command}"; quoted: ${Object.keys(quotedIn).join(', ')}`],
    };
  const path = `${root}/${doc}`;
  const markdown = readFileSync(path, 'utf8');
  if (write) {
    writeFileSync(path, withQuote(markdown, command, transcript));
    return { ok: true, report: [`wrote this run's output into ${doc} (${marker(command)})`] };
  }
  const quoted = quotedBlock(markdown, command);
  if (quoted === undefined) return { ok: false, report: [`${doc} has no block marked ${marker(command)}`] };
  const { onlyQuoted, onlyFresh } = differences(quoted, transcript);
  if (onlyQuoted.length === 0 && onlyFresh.length === 0)
    return { ok: true, report: [`${doc} quotes this output (${shapes(transcript).length} line shapes agree)`] };
  return {
    ok: false,
    report: [
      `${doc} quotes output this run did not print: the quote is stale (or this run went another way).`,
      ...onlyQuoted.map((s) => `  only in ${doc}: ${s}`),
      ...onlyFresh.map((s) => `  only in this run: ${s}`),
      `Update the quote from a run with: ${command.replace(/^npm run demo( --)?/, 'npm run demo --')} --write-docs`,
    ],
  };
}
