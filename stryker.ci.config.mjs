// The mutation check CI runs (npm run mutation:ci, scripts/mutation-ci.ts): Stryker on a fixed part of the
// decision core, the pure rules every drain, choice and repair decision goes through, judged by their own tests, in
// under ten minutes on CI's two cores. The whole core (npm run mutation, stryker.config.mjs) has fourteen times the
// mutants; docs/reliability.md#mutation-score has both.
import base from './stryker.config.mjs';

/** The files CI mutates: the pure decision rules (each with its property tests). */
export const ciFiles = [
  'lambda/cluster/rules/drain-rules.ts',
  'lambda/eviction/rules.ts',
  'lambda/termination/deadlines.ts',
  'lambda/termination-policy/choose.ts',
  'lambda/repair/limits.ts',
];

/**
 * The mutation score (%) CI fails below. It only goes up: scripts/mutation-ci.ts fails when it is lower than any
 * commit recorded, and says when the score has risen a point above it.
 */
export const floor = 99.2;

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  ...base,
  mutate: ciFiles,
  // Judged by each rule's own tests (vitest.mutation-ci.config.ts), not the end-to-end ones.
  vitest: { ...base.vitest, configFile: 'vitest.mutation-ci.config.ts' },
  // Static mutants (module-level constants) need every test rerun on a fresh module graph: most of the time, few
  // of the mutants. They are left out here and in the published score (docs/reliability.md#mutation-score).
  ignoreStatic: true,
  // high and low only colour the report (Stryker wants high above low); break is the floor.
  thresholds: { high: 100, low: Math.min(floor, 99), break: floor },
  reporters: ['clear-text', 'progress', 'json', 'html'],
  jsonReporter: { fileName: 'reports/mutation/ci.json' },
  htmlReporter: { fileName: 'reports/mutation/ci.html' },
};
