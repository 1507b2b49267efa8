import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Files run in name order: least-privilege.test.ts checks, last, that the suite used
 * every right the shipped ClusterRole grants. Hence its place after the scenarios.
 */
export class NameOrderSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    return [...files].sort((a, b) => a.moduleId.localeCompare(b.moduleId));
  }
}
