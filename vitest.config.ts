import { defineConfig } from 'vitest/config';
import { ClusterOrderSequencer } from './test/cluster/sequencer.js';

export default defineConfig({
  test: {
    // Cluster files run in name order, the ones the sequencer lists last; unit files do not care.
    sequence: { sequencer: ClusterOrderSequencer },
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts', 'test/infra/**/*.test.ts'],
          environment: 'node',
          // A CDK synth takes seconds, more on a loaded 2-core machine: no test here is about time.
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
      {
        test: {
          // The construct package installed in fresh apps (npm run package first).
          name: 'package',
          include: ['test/package/**/*.test.ts'],
          environment: 'node',
          testTimeout: 120_000,
          hookTimeout: 900_000,
        },
      },
      {
        test: {
          name: 'cluster',
          include: ['test/cluster/**/*.test.ts'],
          environment: 'node',
          // One control plane for the whole suite; scenarios run one after another.
          fileParallelism: false,
          testTimeout: 180_000,
          hookTimeout: 300_000,
          globalSetup: ['test/cluster/global-setup.ts'],
        },
      },
    ],
  },
});
