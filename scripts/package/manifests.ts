// The packages' package.json files as a build needs them, written for the build and put back
// afterwards: the committed files carry the base version and no invented metadata, the built
// packages the build's version (build-version.ts).
import { readFileSync, writeFileSync } from 'node:fs';

export interface ManifestChange {
  readonly file: string;
  /** Top-level fields to set for the build. */
  readonly changes: Readonly<Record<string, unknown>>;
}

/**
 * jsii refuses a package.json without `repository` (its project-info.js: "must specify the
 * repository attribute") and writes it into the assembly and the wheel's project URLs. The
 * repository has no public home yet, so the committed file has none and the build says so:
 * GNT_REPOSITORY_URL (set by whoever publishes) or the word `unpublished`, never a made-up URL.
 */
export function construction(version: string, env: NodeJS.ProcessEnv): Record<string, unknown> {
  const url = env['GNT_REPOSITORY_URL'];
  return {
    version,
    repository: { type: 'git', url: url && url !== '' ? url : 'unpublished', directory: 'packages/construct' },
  };
}

/** Runs `build` with the changes written; the files are put back as they were, even when it throws or is interrupted. */
export function withManifests(manifests: readonly ManifestChange[], build: () => void): void {
  const originals = manifests.map((m) => ({ file: m.file, text: readFileSync(m.file, 'utf8') }));
  const restore = () => {
    for (const o of originals) writeFileSync(o.file, o.text);
  };
  const interrupted = () => {
    restore();
    process.exit(130);
  };
  process.once('SIGINT', interrupted);
  process.once('SIGTERM', interrupted);
  try {
    for (const [i, m] of manifests.entries()) {
      const manifest = JSON.parse(originals[i]!.text) as Record<string, unknown>;
      writeFileSync(m.file, `${JSON.stringify({ ...manifest, ...m.changes }, null, 2)}\n`);
    }
    build();
  } finally {
    restore();
    process.off('SIGINT', interrupted);
    process.off('SIGTERM', interrupted);
  }
}
