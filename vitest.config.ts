import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts', 'test/infra/**/*.test.ts'],
          environment: 'node',
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
