#!/usr/bin/env node
// The installed command: `graceful-node-termination upgrade <group> ...` and
// `graceful-node-termination check <group> ...`, the same as `npm run upgrade` and `npm run check`.
// The commands are TypeScript run through tsx (a dependency for this reason).
import { register } from 'tsx/esm/api';

const commands = { upgrade: '../scripts/upgrade.ts', check: '../scripts/check.ts' };
const [command, ...rest] = process.argv.slice(2);
if (!(command in commands)) {
  console.error(`usage: graceful-node-termination <${Object.keys(commands).join('|')}> <auto-scaling-group> [options]`);
  process.exit(2);
}
register();
// The command reads its arguments from process.argv[2...] and runs when it is the entry point.
const target = new URL(commands[command], import.meta.url);
process.argv = [process.argv[0], target.pathname, ...rest];
await import(target.href);
