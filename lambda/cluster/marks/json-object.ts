// The JSON our records are stored as on the node: an object, times as ISO 8601.

/** An annotation's JSON object; undefined when absent or not one. */
export function jsonObject(raw: string | undefined): Record<string, unknown> | undefined {
  if (raw === undefined) return undefined;
  try {
    const v = JSON.parse(raw) as unknown;
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

export const iso = (ms: number) => new Date(ms).toISOString();
