// A small YAML writer for the objects the installer applies (rbac.yaml, surge.yaml).

/** A small YAML writer for our own objects (maps, lists, strings, numbers, booleans). */
export function yamlOf(value: unknown, indent = ''): string[] {
  const scalar = (v: unknown) =>
    typeof v === 'string'
      ? /^[A-Za-z0-9./_-]+$/.test(v) && !/^(true|false|null|\d.*)$/.test(v)
        ? v
        : JSON.stringify(v)
      : String(v);
  const lines: string[] = [];
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    if (Array.isArray(v)) {
      if (v.length > 0 && v.every((x) => typeof x !== 'object')) {
        lines.push(`${indent}${k}: [${v.map(scalar).join(', ')}]`);
        continue;
      }
      lines.push(`${indent}${k}:`);
      for (const item of v) {
        const [first, ...rest] = yamlOf(item, `${indent}    `);
        lines.push(`${indent}  - ${first!.trimStart()}`, ...rest);
      }
    } else if (typeof v === 'object' && v !== null) {
      lines.push(`${indent}${k}:`, ...yamlOf(v, `${indent}  `));
    } else {
      lines.push(`${indent}${k}: ${scalar(v)}`);
    }
  }
  return lines;
}
