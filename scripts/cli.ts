// The installed command, `graceful-node-termination <check|upgrade> ...` (npx from the package):
// bundled by scripts/bundle-bin.ts into one file that needs nothing but Node. In development the
// same commands are `npm run check` and `npm run upgrade`.
import { runCommand } from './cluster-access.js';

const usage = `usage: graceful-node-termination <command> [options]

commands:
  check <auto-scaling-group>     which pods cannot leave the group's nodes now, and why
  upgrade <auto-scaling-group>   roll the group on instance refresh with managed-node-group parity

graceful-node-termination <command> --help shows a command's options.`;

const [command, ...rest] = process.argv.slice(2);
if (command === undefined || command === '--help' || command === '-h' || command === 'help') {
  console.log(usage);
  process.exit(command === undefined ? 2 : 0);
}
if (command !== 'check' && command !== 'upgrade') {
  console.error(`unknown command ${JSON.stringify(command)}\n\n${usage}`);
  process.exit(2);
}
// The commands read their arguments from process.argv[2...]; argv[1] names the command, not a
// file, so neither runs itself on import (runAsCommand): this file runs the one asked for.
process.argv = [process.argv[0]!, `graceful-node-termination ${command}`, ...rest];
const { main } = command === 'check' ? await import('./check.js') : await import('./upgrade.js');
runCommand(command, main);
