// npm run docs: regenerates the tables of docs/ from their one definition.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { withOptionsTable, withTable } from './config-table.js';
import { withParameterTables } from './release-docs.js';
import { withFileMap } from './architecture-map.js';
import { withVpcRoutes } from './vpc-routes.js';

for (const [file, rewrite] of [
  ['../docs/configuration.md', withTable],
  ['../docs/cloudformation.md', withParameterTables],
  ['../docs/architecture.md', (page: string) => withFileMap(page)],
  ['../docs/deploy.md', (page: string) => withVpcRoutes(withOptionsTable(page))],
] as const) {
  const page = fileURLToPath(new URL(file, import.meta.url));
  writeFileSync(page, rewrite(readFileSync(page, 'utf8')));
  console.log(`wrote ${page}`);
}
