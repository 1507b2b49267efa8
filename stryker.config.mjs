// Stryker's mutation run on the decision core (npm run mutation; docs/reliability.md#mutation-score publishes it):
// every file of the core folders mutated, each mutant judged by the unit tests that cover it.
// https://stryker-mutator.io/docs/stryker-js/configuration/

/** The folders whose decisions the score measures (issue 39). */
export const coreFolders = ['eviction', 'termination', 'termination-policy', 'cluster', 'reconcile', 'repair'];

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  testRunner: 'vitest',
  // One project of the unit tests that test lambda/ logic, with a fixed property seed (vitest.mutation.config.ts);
  // `related` runs only the test files that import the mutated file.
  vitest: { configFile: 'vitest.mutation.config.ts', related: true },
  mutate: coreFolders.map((folder) => `lambda/${folder}/**/*.ts`),
  // Per test: a mutant runs only the tests that reached it in the dry run.
  coverageAnalysis: 'perTest',
  // The development machines have 2 cores, shared: two test runners at most.
  concurrency: 2,
  // A loaded machine runs a test several times slower than alone: a mutant is a timeout only well past that.
  timeoutMS: 10_000,
  dryRunTimeoutMinutes: 20,
  reporters: ['clear-text', 'progress', 'json', 'html'],
  jsonReporter: { fileName: 'reports/mutation/mutation.json' },
  htmlReporter: { fileName: 'reports/mutation/mutation.html' },
  tempDirName: '.stryker-tmp',
  ignorePatterns: ['dist', 'cdk.out', '.cache', 'demo/out', 'reports', 'packages/cli/bin'],
  // Stryker rewrites tsconfig.json's paths for the sandbox with TypeScript's JavaScript API, which TypeScript 7
  // (the native compiler this repository uses) does not have; our tsconfig has no extends or references to
  // rewrite, so Stryker is pointed at a file that does not exist and leaves it alone.
  tsconfigFile: 'stryker-no-tsconfig-rewrite.json',
};
