// One real control plane for the whole cluster suite. It fails (never skips) when the
// plane cannot be built or started.
import type { TestProject } from 'vitest/node';
import {
  admin,
  createKwokNode,
  createPdb,
  createPod,
  ensureNamespace,
  newInstanceId,
  rbacFile,
  until,
  waitNodeReady,
} from './kube.js';
import { startPlane, type PlaneInfo } from './plane/plane.js';

declare module 'vitest' {
  export interface ProvidedContext {
    plane: PlaneInfo;
  }
}

export default async function setup(project: TestProject) {
  const started = Date.now();
  const plane = await startPlane({ log: (line) => console.log(`[plane] ${line}`) });
  try {
    const a = admin(plane);
    // The drainer's rights are exactly the shipped RBAC file.
    a.kubectl('apply', '-f', rbacFile);
    // Real readiness, beyond /readyz: kwok runs nodes and pods, the scheduler places a
    // pod, the disruption controller computes a budget.
    await createKwokNode(a, 'probe-node', newInstanceId(), { scenario: 'probe' });
    await waitNodeReady(a, 'probe-node');
    await ensureNamespace(a, 'probe');
    await createPod(a, 'probe', 'probe', { nodeSelector: { scenario: 'probe' } });
    await until('probe pod scheduled and Running', 30_000, async () => {
      const pod = await a.core.readNamespacedPod({ namespace: 'probe', name: 'probe' });
      return pod.spec?.nodeName === 'probe-node' && pod.status?.phase === 'Running';
    });
    await createPdb(a, 'probe', 'probe', 'probe', 1);
    a.kubectl('delete', 'namespace', 'probe', '--wait=false');
    a.kubectl('delete', 'node', 'probe-node', '--wait=false');
    console.log(`[plane] ready for the suite in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  } catch (error) {
    await plane.stop();
    throw error;
  }
  project.provide('plane', {
    dir: plane.dir,
    server: plane.server,
    caPem: plane.caPem,
    adminKubeconfig: plane.adminKubeconfig,
    drainerKubeconfig: plane.drainerKubeconfig,
    auditLog: plane.auditLog,
    binDir: plane.binDir,
    kubectl: plane.kubectl,
  });
  return async () => {
    await plane.stop();
  };
}
