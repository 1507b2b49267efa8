// The construct package's Lambda code: the asset both functions run, bundled when the package
// was built (scripts/package.ts), so a consumer's synthesis needs no esbuild, AWS SDK or handler
// sources. Copied over infra/lambda-code.ts, which bundles at synthesis instead.
import { join } from 'node:path';
import { aws_lambda as lambda } from 'aws-cdk-lib';

/** lib/infra/lambda-code.js -> assets/lambda, in the installed package. */
export function lambdaCode(): lambda.Code {
  return lambda.Code.fromAsset(join(__dirname, '..', '..', 'assets', 'lambda'));
}
