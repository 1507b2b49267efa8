// A node's VolumeAttachments read by name (lambda/adapters/kubernetes/named-attachments.ts):
// a GET each, gone for good on 404, a failed read keeping the last view, RBAC named as RBAC.
import { describe, expect, it } from 'vitest';
import { openNamedAttachments } from '../../../../lambda/adapters/kubernetes/named-attachments.js';
import { KubeApiError } from '../../../../lambda/adapters/kubernetes/kube-api-error.js';
import { type KubeHttp } from '../../../../lambda/adapters/kubernetes/kube-http.js';
import { AccessDeniedError } from '../../../../lambda/shared/errors.js';
import { MemoryLog } from '../../../fakes/fake-world.js';

const va = (name: string) => ({
  metadata: { name, uid: `u-${name}` },
  spec: { attacher: 'ebs.csi.aws.com', nodeName: 'node-a', source: { persistentVolumeName: `pv-${name}` } },
});
const apiError = (code: number) =>
  new KubeApiError(
    code,
    {
      message:
        code === 403
          ? 'volumeattachments.storage.k8s.io "x" is forbidden: User "d" cannot get resource "volumeattachments"'
          : 'too many requests',
    },
    {},
    'get volumeattachment',
  );

function fakeKube(answer: (name: string) => unknown | Error): KubeHttp & { paths: string[] } {
  const paths: string[] = [];
  return {
    paths,
    async request<T>(_method: string, path: string): Promise<T> {
      paths.push(path);
      const a = answer(decodeURIComponent(path.split('/').at(-1)!));
      if (a instanceof Error) throw a;
      return a as T;
    },
    watch: () => ({ abort() {} }),
  };
}

describe('VolumeAttachments read by name', () => {
  it('reads each name with a GET, and stops asking for one answered 404 (detached)', async () => {
    const there = new Set(['csi-a', 'csi-b']);
    const kube = fakeKube((name) => (there.has(name) ? va(name) : apiError(404)));
    const view = await openNamedAttachments(kube, ['csi-a', 'csi-b'], new MemoryLog(), 1);
    expect(view.current().map((a) => a.name)).toEqual(['csi-a', 'csi-b']);
    expect(kube.paths).toEqual([
      '/apis/storage.k8s.io/v1/volumeattachments/csi-a',
      '/apis/storage.k8s.io/v1/volumeattachments/csi-b',
    ]);
    there.delete('csi-a');
    await view.changed(50);
    expect(view.current().map((a) => a.name)).toEqual(['csi-b']);
    kube.paths.length = 0;
    await view.changed(50);
    expect(kube.paths).toEqual(['/apis/storage.k8s.io/v1/volumeattachments/csi-b']);
    view.close();
  });

  it('a 429 keeps the last view (and before any view, says it does not know)', async () => {
    let failing = true;
    const log = new MemoryLog();
    const view = await openNamedAttachments(
      fakeKube((name) => (failing ? apiError(429) : va(name))),
      ['csi-a'],
      log,
      1,
    );
    expect(() => view.current()).toThrow();
    failing = false;
    await view.changed(50);
    expect(view.current().map((a) => a.name)).toEqual(['csi-a']);
    failing = true;
    await view.changed(50);
    expect(view.current().map((a) => a.name)).toEqual(['csi-a']);
    expect(
      log.messages('warn').filter((m) => m.startsWith('could not read the VolumeAttachments by name')),
    ).toHaveLength(2);
    view.close();
  });

  it('a 403 is RBAC: the error says so', async () => {
    const view = await openNamedAttachments(
      fakeKube(() => apiError(403)),
      ['csi-a'],
      new MemoryLog(),
      1,
    );
    expect(() => view.current()).toThrow(AccessDeniedError);
    view.close();
  });
});
