// What the counting proxy in front of the API server saw, grouped for the results.

/** `GET /api/v1/nodes/x` and `GET /api/v1/nodes/y` are one kind: the path without names. */
export function bytesByKind(
  answers: readonly { method: string; path: string; bytes: number }[],
): Record<string, number> {
  const out: Record<string, number> = {};
  for (const a of answers) {
    const url = new URL(a.path, 'http://x');
    const kind = `${a.method} ${url.pathname
      .replace(/\/nodes\/[^/]+/, '/nodes/{name}')
      .replace(/\/namespaces\/[^/]+/, '/namespaces/{ns}')
      .replace(/\/(pods|events)\/[^/]+/, '/$1/{name}')}${url.searchParams.get('watch') ? ' (watch)' : ''}`;
    out[kind] = (out[kind] ?? 0) + a.bytes;
  }
  return Object.fromEntries(Object.entries(out).sort((x, y) => y[1] - x[1]));
}

/** Requests by kind (`create pods/eviction`), from the audit log. */
/** A request's kind as the tables name it: `create pods/eviction`. */
export function kindOf(e: { verb: string; resource: string; subresource: string | undefined }): string {
  return `${e.verb} ${e.resource}${e.subresource ? `/${e.subresource}` : ''}`;
}

export function requestsByKind(
  entries: readonly { verb: string; resource: string; subresource: string | undefined }[],
): Record<string, number> {
  const out: Record<string, number> = {};
  for (const e of entries) out[kindOf(e)] = (out[kindOf(e)] ?? 0) + 1;
  return out;
}
