import { defineConfig } from 'vitest/config';
import base from './vitest.mutation.config.js';

// The tests CI's mutation check (stryker.ci.config.mjs, npm run mutation:ci) judges the decision rules by: each rule's
// own tests and properties, the files that import it. The end-to-end tests that also reach them (the pipeline, its
// model) are left to the whole run (npm run mutation): a mutant they cover runs them all, which on CI's two cores
// would take the check past its ten minutes.
export const ciTests = [
  'test/unit/cluster/rules/drain-rules*.test.ts',
  'test/unit/cluster/rules/drain-plan*.test.ts',
  'test/unit/cluster/rules/pods.test.ts',
  'test/unit/eviction/rules*.test.ts',
  'test/unit/eviction/pass-view*.test.ts',
  'test/unit/eviction/surge-gate.test.ts',
  'test/unit/termination/deadlines*.test.ts',
  'test/unit/termination/hand-off.test.ts',
  'test/unit/termination-policy/choose*.test.ts',
  'test/unit/termination-policy/cost-rules*.test.ts',
  'test/unit/repair/limits*.test.ts',
  'test/unit/reconcile/resume-window*.test.ts',
];

// Spread, not mergeConfig: that would add these to the base's include rather than replace it.
export default defineConfig({ ...base, test: { ...base.test, name: 'mutation-ci', include: ciTests } });
