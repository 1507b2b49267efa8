// infra/ at print width 120, comments and strings too (prettier wraps only code): a line that
// does not fit is split, never packed.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { root } from './fixtures.js';

const sources = (dir: string): string[] =>
  readdirSync(join(root, dir), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );

it('keeps every line of infra/ within 120 characters', () => {
  const long = sources('infra').flatMap((file) =>
    readFileSync(join(root, file), 'utf8')
      .split('\n')
      .flatMap((line, i) => (line.length > 120 ? [`${file}:${i + 1}: ${line.length}`] : [])),
  );
  expect(long).toEqual([]);
});
