// The generated parts of the docs sit between two markers; `npm run docs` rewrites what is
// between them, and the tests compare a committed page with its rewrite.

/** The page with what lies between `start` and `end` replaced by `content`. */
export function replaceBetween(page: string, start: string, end: string, content: string): string {
  const from = page.indexOf(start);
  const to = page.indexOf(end);
  if (from < 0 || to < from) throw new Error(`the page has no ${start} ... ${end} markers`);
  return `${page.slice(0, from + start.length)}\n${content}\n${page.slice(to)}`;
}
