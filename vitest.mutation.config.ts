import { defineConfig } from 'vitest/config';

// The unit tests Stryker runs against the mutated core (stryker.config.mjs, npm run mutation): the unit project
// without the folders that test no lambda/ logic (the plane's download scripts, the docs, the demo transcript, the
// Terraform module) and without test/infra's CDK synths. One project, so no cluster globalSetup starts a plane. The
// property tests run on one fixed seed (test/fakes/arbitraries.ts reads PROPERTY_SEED): a mutant is judged by the
// same inputs in every run.
export default defineConfig({
  test: {
    name: 'mutation',
    include: ['test/unit/**/*.test.ts'],
    exclude: [
      'test/unit/plane/**',
      'test/unit/docs/**',
      'test/unit/demo/**',
      'test/unit/terraform/**',
      'test/unit/scripts/packed-bin*.test.ts',
      'test/unit/scripts/release*.test.ts',
    ],
    environment: 'node',
    env: { PROPERTY_SEED: '39' },
    testTimeout: 60_000,
    hookTimeout: 120_000,
  },
});
