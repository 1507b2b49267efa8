// How the Lambda is bundled, shared by the CDK construct and scripts/bundle.ts so the
// measured bundle is the deployed one.
export const lambdaBundling = {
  target: 'node24',
  minify: true,
  // @kubernetes/client-node is ESM and some of its dependencies still call require():
  // an ESM bundle needs a real require or it fails with "Dynamic require of ... is not supported".
  esmBanner: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);",
} as const;
