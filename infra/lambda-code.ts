// The one Lambda asset both functions run: bundled by esbuild on this machine at synthesis.
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AssetHashType, DockerImage, aws_lambda as lambda, type ILocalBundling } from 'aws-cdk-lib';
import { bundleLambda, projectRoot } from './bundling.js';

let bundled: string | undefined;

/**
 * esbuild runs once per process; every stack synthesized in it (an app of several stacks, a
 * test suite) stages a copy. CDK's own asset cache is per output directory, so without this
 * each App would bundle again.
 */
function bundleOnce(): string {
  if (bundled === undefined) {
    const dir = mkdtempSync(join(tmpdir(), 'graceful-node-termination-lambda-'));
    bundleLambda(dir);
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
    bundled = dir;
  }
  return bundled;
}

export function lambdaCode(): lambda.Code {
  // esbuild on the local machine; the image is never used (no Docker here or in CI).
  const local: ILocalBundling = {
    tryBundle(outputDir: string): boolean {
      cpSync(bundleOnce(), outputDir, { recursive: true });
      return true;
    },
  };
  return lambda.Code.fromAsset(join(projectRoot, 'lambda'), {
    assetHashType: AssetHashType.OUTPUT,
    bundling: { image: DockerImage.fromRegistry('unused-local-bundling-only'), local },
  });
}
