import { existsSync } from 'node:fs';
import { join, relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The cluster files that run after every other, in this order: the RBAC installer deletes the
 * shipped ClusterRole and binding and installs them again at its end, and least-privilege.test.ts
 * checks, last, that the suite used every right the shipped ClusterRole grants (from the audit
 * log of all that ran before it). Paths from the repository root.
 */
export const runLast: readonly string[] = [
  'test/cluster/rbac-installer.test.ts',
  'test/cluster/least-privilege.test.ts',
];

/** Files run in name order, but the ones `runLast` lists, which run after them in the list's order. */
export class ClusterOrderSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const root = this.ctx.config.root;
    const missing = runLast.filter((file) => !existsSync(join(root, file)));
    if (missing.length > 0) {
      throw new Error(
        `test/cluster/sequencer.ts lists ${missing.join(', ')} to run last, but no such file exists: ` +
          'a renamed or removed file must be renamed or removed in runLast too',
      );
    }
    const place = (file: TestSpecification) => runLast.indexOf(relative(root, file.moduleId));
    return [...files].sort((a, b) => place(a) - place(b) || a.moduleId.localeCompare(b.moduleId));
  }
}
