// The installed command, `graceful-node-termination <command> ...` (check, upgrade, cleanup, migrate,
// termination-policy, install, uninstall, rbac; npx from the package packages/cli): bundled by
// scripts/bundle-bin.ts into one file that needs nothing but Node (24 or later: the bin's entry
// refuses older ones before this bundle is read). In development the same commands are
// `npm run check` and `npm run upgrade`.
import { join } from 'node:path';
import { buildVersion } from './build-version.js';
import { runCommand } from './run-command.js';
import {
  checkUsage,
  cleanupUsage,
  cliUsage,
  installUsage,
  migrateUsage,
  rbacUsage,
  terminationPolicyUsage,
  uninstallUsage,
  upgradeUsage,
} from './usage.js';

/** Set by the bundle (esbuild define): the version of packages/cli/package.json. */
declare const GNT_CLI_VERSION: string | undefined;

const commands = [
  'check',
  'upgrade',
  'cleanup',
  'migrate',
  'termination-policy',
  'install',
  'uninstall',
  'rbac',
] as const;

/** The bundle's version, or from a clone the build's (a dev version unless on a release tag). */
function version(): string {
  if (typeof GNT_CLI_VERSION === 'string') return GNT_CLI_VERSION;
  return buildVersion(join(import.meta.dirname, '..')).version;
}

const [command, ...rest] = process.argv.slice(2);
if (command === '--version' || command === '-v' || command === 'version') {
  console.log(`graceful-node-termination ${version()} (node ${process.versions.node})`);
  process.exit(0);
}
if (command === undefined || command === '--help' || command === '-h' || command === 'help') {
  console.log(cliUsage);
  process.exit(command === undefined ? 2 : 0);
}
if (!(commands as readonly string[]).includes(command)) {
  console.error(
    `unknown command ${JSON.stringify(command)}; commands: ${commands.join(', ')} (graceful-node-termination --help)`,
  );
  process.exit(2);
}
if (rest.includes('--help') || rest.includes('-h')) {
  const usages: Record<(typeof commands)[number], string> = {
    check: checkUsage,
    upgrade: upgradeUsage,
    cleanup: cleanupUsage,
    migrate: migrateUsage,
    'termination-policy': terminationPolicyUsage,
    install: installUsage,
    uninstall: uninstallUsage,
    rbac: rbacUsage,
  };
  console.log(usages[command as (typeof commands)[number]]);
  process.exit(0);
}
const loaders = {
  check: () => import('./check.js'),
  upgrade: () => import('./upgrade-command.js'),
  cleanup: () => import('./cleanup.js'),
  migrate: () => import('./migrate-command.js'),
  'termination-policy': () => import('./termination-policy.js'),
  install: () => import('./install.js'),
  uninstall: () => import('./uninstall.js'),
  rbac: () => import('./rbac-command.js'),
};
const { main } = await loaders[command as (typeof commands)[number]]();
runCommand(command, main, rest);
