// The opening the cluster scenarios share: the suite's one control plane (global-setup.ts starts it and provides
// its address), an admin client of it, the drainer's writes as the audit log records them, and the hooks that give
// a describe block its own namespace or its own drainer. Each scenario's own setup stays in its file.
import { afterAll, beforeAll, inject } from 'vitest';
import { startDrainer, type Drainer, type DrainerOptions } from './drainer.js';
import { admin, byDrainer, ensureNamespace, readAudit } from './kube.js';

/** The suite's control plane, as global-setup.ts provides it. */
export const plane = inject('plane');

/** The plane's administrator: kubectl and the typed API clients. */
export const a = admin(plane);

/** What the drainer changed in the cluster since `since` (creates, updates, patches, deletes; Events left out). */
export const drainerWrites = (since: number) =>
  readAudit(
    plane,
    (e) =>
      byDrainer(e) &&
      e.atMs >= since &&
      ['create', 'update', 'patch', 'delete'].includes(e.verb) &&
      e.resource !== 'events',
  );

/** A namespace for the scenarios of the describe block this is called in: created before them, deleted after. */
export function blockNamespace(name: string): void {
  beforeAll(() => ensureNamespace(a, name));
  afterAll(() => {
    a.kubectl('delete', 'namespace', name, '--wait=false');
  });
}

/**
 * One drainer for the scenarios of the describe block this is called in: started before them (once `namespace`,
 * when given, exists) and restored after. The block's tests use the value returned as the drainer itself: it
 * forwards to the one its beforeAll started (a Proxy, since that drainer does not exist yet when the block is
 * declared).
 */
export function blockDrainer(options: DrainerOptions, o: { readonly namespace?: string } = {}): Drainer {
  let started: Drainer | undefined;
  beforeAll(async () => {
    if (o.namespace !== undefined) await ensureNamespace(a, o.namespace);
    started = startDrainer(plane, options);
  });
  afterAll(() => started?.restore());
  const current = (): Drainer => {
    if (started === undefined) throw new Error("the block's drainer is used outside its tests (before its beforeAll)");
    return started;
  };
  return new Proxy({} as Drainer, {
    get: (_, key) => Reflect.get(current(), key),
    set: (_, key, value) => Reflect.set(current(), key, value),
    has: (_, key) => Reflect.has(current(), key),
  });
}
