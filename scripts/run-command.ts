// How an operator command runs: its exit code, and a failure said in one line (bad usage
// exit 2, any other failure exit 1), from `npm run <command>` or the installed command.
import { exitCodes, UsageError } from './command-options.js';
import { AwsError, KubernetesError, rootCause } from './failure.js';

/**
 * Runs a command's main when its file is the entry point (npm run check, npm run upgrade); the
 * installed command (scripts/cli.ts) calls runCommand itself.
 */
export function runAsCommand(
  moduleUrl: string,
  name: string,
  main: (args: readonly string[]) => Promise<number>,
): void {
  // Bundled into the bin every module shares the bin's URL: there only cli.ts runs a command.
  if (moduleUrl.endsWith('.ts') && moduleUrl === `file://${process.argv[1]}`)
    runCommand(name, main, process.argv.slice(2));
}

/**
 * Exits with main's code. A failure is one line: bad usage (exit 2) says what was wrong and the
 * valid values; a failure met on the way (exit 1) names where (failure.ts). GNT_DEBUG=1 adds
 * the Error itself, stack and causes.
 */
export function runCommand(
  name: string,
  main: (args: readonly string[]) => Promise<number>,
  args: readonly string[],
): void {
  main(args).then(
    (code) => process.exit(code),
    (error: unknown) => {
      const known = error instanceof UsageError || error instanceof KubernetesError || error instanceof AwsError;
      console.error(known ? `${name}: ${error.message}` : `${name} failed: ${rootCause(error)}`);
      if (process.env['GNT_DEBUG']) console.error(error);
      process.exit(error instanceof UsageError ? exitCodes.usage : exitCodes.failed);
    },
  );
}
