// The first step of every npm script (package.json): refuse a Node older than the repository's
// (package.json engines) in one line, before tsx, vitest or cdk load anything. Plain JavaScript
// that any Node parses. Without it an older Node gets far enough to crash: on Node 20 loading
// @kubernetes/client-node dies with "TypeError: Cannot read properties of undefined (reading
// 'bind')" in undici (Node 20 has no zlib zstd), and the unit suite fails 8 files the same way.
// npm scripts find `node` in node_modules/.bin first, so this checks the very Node the script's
// tools run on: Node 24 from the `node` devDependency after `npm ci`, the machine's own after
// `npm ci --ignore-scripts`, which skips that package's install script.
import { readFileSync } from 'node:fs';

const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
const required = Number(/^>=\s*(\d+)/.exec(manifest.engines.node)[1]);
const found = process.versions.node;
if (Number(found.split('.')[0]) < required) {
  console.error(
    `${manifest.name} needs Node.js ${required} or later; this script runs on Node.js ${found} ` +
      `(${process.execPath}): \`npm rebuild node\` installs Node ${required} in node_modules ` +
      '(the step --ignore-scripts skipped), or `nvm use` (.nvmrc)',
  );
  process.exit(1);
}
