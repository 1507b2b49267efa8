// npm run docs: regenerates the tables of docs/ from their one definition.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { withTable } from './config-table.js';

const page = fileURLToPath(new URL('../docs/configuration.md', import.meta.url));
writeFileSync(page, withTable(readFileSync(page, 'utf8')));
console.log(`wrote ${page}`);
