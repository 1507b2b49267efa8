// No placeholder ships: example.com is a domain nobody reads alarms or runbooks at. A field
// without a real value is left out (the runbook link), a value to fill in says so (`<on-call
// e-mail>`). Checked in infra/ and the pages whose examples come from it.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { root } from './fixtures.js';

const filesUnder = (dir: string): string[] =>
  readdirSync(join(root, dir), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? filesUnder(join(dir, e.name)) : [join(dir, e.name)],
  );
const pages = ['configuration', 'cloudformation', 'deploy', 'security', 'observe-mode', 'getting-started'].map((page) =>
  join('docs', `${page}.md`),
);

describe('placeholders', () => {
  it.each([...filesUnder('infra'), ...pages])('%s names no example.com', (file) => {
    expect(readFileSync(join(root, file), 'utf8')).not.toMatch(/example\.(com|org|net)\b/);
  });

  it("README's Install section names no example.com", () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    const install = readme.slice(
      readme.indexOf('## Install'),
      readme.indexOf('\n## ', readme.indexOf('## Install') + 1),
    );
    expect(install.length).toBeGreaterThan(500);
    expect(install).not.toMatch(/example\.(com|org|net)\b/);
  });
});
