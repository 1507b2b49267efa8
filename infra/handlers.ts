// The handler strings of both functions: the asset's module names (bundling.ts's entries) and
// their export. Apart from bundling.ts so the construct package, which ships the asset
// prebuilt, needs no esbuild at synthesis.
export const lambdaHandlers = { drainer: 'index.handler', rbacInstaller: 'rbac-installer.handler' } as const;
