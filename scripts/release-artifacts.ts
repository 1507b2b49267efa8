// The pieces of `npm run release` (release.ts) that are more than a copy: the checksum list,
// the SBOM's identity and the Terraform module archive.
import { createHash } from 'node:crypto';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, relative } from 'node:path';
import { zipDirectory } from './zip.js';

/** `sha256sum` lines (`<hex>  <name>`) for every file of `dir` but SHA256SUMS itself, by name: `sha256sum -c` reads them. */
export function checksums(dir: string): string {
  return readdirSync(dir)
    .filter((name) => name !== 'SHA256SUMS' && statSync(join(dir, name)).isFile())
    .sort()
    .map(
      (name) =>
        `${createHash('sha256')
          .update(readFileSync(join(dir, name)))
          .digest('hex')}  ${name}\n`,
    )
    .join('');
}

interface CycloneDx {
  metadata: {
    component: { name: string; version: string; 'bom-ref'?: string; [k: string]: unknown };
    [k: string]: unknown;
  };
  [k: string]: unknown;
}

/**
 * `npm sbom`'s CycloneDX document with the release's identity: npm names the root component
 * after the folder it ran in and gives package.json's version; the release is
 * graceful-node-termination at the build's version.
 */
export function cycloneDx(raw: string, version: string): CycloneDx {
  const bom = JSON.parse(raw) as CycloneDx;
  if (bom['bomFormat'] !== 'CycloneDX' || typeof bom.metadata?.component !== 'object')
    throw new Error('npm sbom did not write a CycloneDX document with a root component');
  bom.metadata.component = { ...bom.metadata.component, name: 'graceful-node-termination', version };
  return bom;
}

/** What of terraform/ goes into the archive: the module, its README and the examples, no local state. */
const shipped = (path: string): boolean =>
  !/(^|\/)(\.terraform|terraform\.tfstate[^/]*|\.terraform\.lock\.hcl|release)(\/|$)/.test(path);

/**
 * The Terraform module as one zip: terraform/ (the module at its root, examples/ beside it),
 * the licence, and the release's template and Lambda zip in release/, where the module looks by
 * default. Deterministic (zip.ts), so its checksum names the release.
 */
export function terraformArchive(moduleDir: string, releaseFiles: readonly string[]): Buffer {
  const stage = mkdtempSync(join(tmpdir(), 'gnt-terraform-'));
  try {
    cpSync(moduleDir, stage, { recursive: true, filter: (source) => shipped(relative(moduleDir, source)) });
    cpSync(join(moduleDir, '..', 'LICENSE'), join(stage, 'LICENSE'));
    for (const file of releaseFiles) cpSync(file, join(stage, 'release', basename(file)));
    return zipDirectory(stage);
  } finally {
    rmSync(stage, { recursive: true, force: true });
  }
}
