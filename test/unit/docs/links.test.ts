// Every relative link in the repository's Markdown (README.md, docs/, the packages' READMEs, ...)
// leads somewhere: the file or folder exists, and an anchor (#section) is a heading of the file it
// names, slugged as GitHub slugs headings, or an <a id> / <a name> in it. Links to other sites
// are not followed (no network here); links inside code are not links.
//   https://github.com/github/cmark-gfm/blob/master/extensions/autolink.c (autolinks aside)
//   https://docs.github.com/en/get-started/writing-on-github/getting-started-with-writing-and-formatting-on-github/basic-writing-and-formatting-syntax#section-links
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..', '..');
const skipped = new Set(['node_modules', 'cdk.out', 'dist', 'out']);

function markdownFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    if (e.name.startsWith('.') || skipped.has(e.name)) return [];
    const path = join(dir, e.name);
    if (e.isDirectory()) return markdownFiles(path);
    return e.name.endsWith('.md') ? [path] : [];
  });
}

/** Lines outside fenced code blocks, with their line numbers and inline code taken out. */
function proseLines(text: string): { line: string; number: number }[] {
  const out: { line: string; number: number }[] = [];
  let fence: string | undefined;
  text.split('\n').forEach((line, i) => {
    const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (marker !== undefined && (fence === undefined || marker.startsWith(fence))) {
      fence = fence === undefined ? marker : undefined;
      return;
    }
    if (fence === undefined) out.push({ line: line.replace(/`+[^`]*`+/g, ''), number: i + 1 });
  });
  return out;
}

/** GitHub's heading slug: the rendered text, lowercased, punctuation but `-` and `_` dropped, spaces as `-`. */
export function slug(heading: string): string {
  return heading
    .replace(/<[^>]+>/g, '')
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/`/g, '')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

const anchorCache = new Map<string, Set<string>>();

/** The anchors a Markdown file has: its headings (a repeated one gets -1, -2, ...) and its HTML ids. */
function anchorsOf(file: string): Set<string> {
  const known = anchorCache.get(file);
  if (known !== undefined) return known;
  const anchors = new Set<string>();
  const counts = new Map<string, number>();
  const text = readFileSync(file, 'utf8');
  for (const { line } of proseLines(text)) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)?.[1];
    if (heading !== undefined) {
      const base = slug(heading);
      const n = counts.get(base) ?? 0;
      counts.set(base, n + 1);
      anchors.add(n === 0 ? base : `${base}-${n}`);
    }
  }
  // Inline code is no anchor, but an <a id> in prose (a table row, say) is.
  for (const { line } of proseLines(text))
    for (const tag of line.matchAll(/<a\s[^>]*>/g))
      for (const m of tag[0].matchAll(/\s(?:id|name)=["']([^"']+)["']/g)) anchors.add(m[1]!);
  anchorCache.set(file, anchors);
  return anchors;
}

/** Every relative link target of a file: inline links and images, and reference definitions. */
function linksOf(file: string): { target: string; number: number }[] {
  return proseLines(readFileSync(file, 'utf8')).flatMap(({ line, number }) => [
    ...[...line.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+["'][^"']*["'])?\s*\)/g)].map((m) => ({ target: m[1]!, number })),
    ...[...line.matchAll(/^\s*\[[^\]]+\]:\s+<?(\S+?)>?(?:\s|$)/g)].map((m) => ({ target: m[1]!, number })),
    ...[...line.matchAll(/<a\s[^>]*href=["']([^"']+)["']/g)].map((m) => ({ target: m[1]!, number })),
  ]);
}

/** Why a link leads nowhere, or undefined when it leads somewhere (other sites are not followed). */
export function brokenLink(file: string, target: string): string | undefined {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target)) return undefined;
  const hash = target.indexOf('#');
  const path = hash === -1 ? target : target.slice(0, hash);
  const anchor = hash === -1 ? undefined : decodeURIComponent(target.slice(hash + 1));
  const to = path === '' ? file : resolve(dirname(file), decodeURIComponent(path));
  if (!existsSync(to)) return `no file ${relative(root, to)}`;
  if (anchor === undefined || anchor === '' || !to.endsWith('.md') || statSync(to).isDirectory()) return undefined;
  return anchorsOf(to).has(anchor) ? undefined : `no heading or anchor #${anchor} in ${relative(root, to)}`;
}

describe('links in the Markdown', () => {
  const files = markdownFiles(root);

  it('finds the documentation: README.md, every page of docs/, the packages', () => {
    const names = files.map((f) => relative(root, f));
    expect(names).toEqual(expect.arrayContaining(['README.md', 'CONTRIBUTING.md', 'docs/how-it-works.md']));
    expect(names.filter((n) => n.startsWith('docs/')).length).toBeGreaterThan(20);
  });

  it('slugs headings as GitHub does', () => {
    expect(slug('Clusters on aws-auth')).toBe('clusters-on-aws-auth');
    expect(slug('`upgrade --release`')).toBe('upgrade---release');
    expect(slug('1. Watch it on a local control plane')).toBe('1-watch-it-on-a-local-control-plane');
    expect(slug("The rules, with managed groups' defaults")).toBe('the-rules-with-managed-groups-defaults');
    expect(slug('From 0.2 to 0.3')).toBe('from-02-to-03');
    expect(slug('Least privilege: the [fence](surge.md)')).toBe('least-privilege-the-fence');
  });

  it('tells a missing file and a missing anchor from a good link', () => {
    const readme = join(root, 'README.md');
    expect(brokenLink(readme, 'docs/how-it-works.md#the-demo')).toBeUndefined();
    expect(brokenLink(readme, 'https://docs.aws.amazon.com/#nothing-checked')).toBeUndefined();
    expect(brokenLink(readme, 'docs/nowhere.md')).toBe('no file docs/nowhere.md');
    expect(brokenLink(readme, 'docs/how-it-works.md#the-dem')).toBe(
      'no heading or anchor #the-dem in docs/how-it-works.md',
    );
    expect(brokenLink(join(root, 'docs', 'operations.md'), '#alarm-repairsheld')).toBeUndefined();
  });

  it('every relative link leads to a file that exists, and every anchor to a heading or an id in it', () => {
    const broken = files.flatMap((file) =>
      linksOf(file).flatMap(({ target, number }) => {
        const why = brokenLink(file, target);
        return why === undefined ? [] : [`${relative(root, file)}:${number}: ${target}: ${why}`];
      }),
    );
    expect(broken).toEqual([]);
  });
});
