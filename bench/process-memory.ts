// How much memory a bench's own processes hold: this process and every process it started (the
// control plane: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok), their
// resident set from /proc/<pid>/status sampled every few seconds. Only descendants count, so
// another agent's plane on a shared machine does not. The rotation bench reports it to say why
// its size fits the machine, and how often another kube-apiserver ran beside its own (the
// machine is shared: a plane of another's takes CPU from this one's).
import { readdirSync, readFileSync } from 'node:fs';

function processes(): Map<number, { name: string; parent: number; rssKiB: number }> {
  const out = new Map<number, { name: string; parent: number; rssKiB: number }>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const status = readFileSync(`/proc/${entry}/status`, 'utf8');
      const field = (key: string) => new RegExp(`^${key}:\\s*(\\S+)`, 'm').exec(status)?.[1];
      out.set(Number(entry), {
        name: field('Name') ?? '?',
        parent: Number(field('PPid') ?? 0),
        rssKiB: Number(field('VmRSS') ?? 0),
      });
    } catch {
      /* gone meanwhile */
    }
  }
  return out;
}

/** Resident MiB of this process and its descendants, by process name ("bench" for this one); others' API servers. */
function sample(): { mib: Record<string, number>; otherApiServers: number } {
  const all = processes();
  const ours = new Set([process.pid]);
  // Parents come before children in no particular order: repeat until nothing is added.
  for (let added = true; added;) {
    added = false;
    for (const [pid, p] of all)
      if (!ours.has(pid) && ours.has(p.parent)) {
        ours.add(pid);
        added = true;
      }
  }
  const mib: Record<string, number> = {};
  for (const pid of ours) {
    const p = all.get(pid);
    if (p === undefined) continue;
    const key = pid === process.pid ? 'bench' : p.name;
    mib[key] = (mib[key] ?? 0) + p.rssKiB / 1024;
  }
  const otherApiServers = [...all].filter(([pid, p]) => p.name === 'kube-apiserver' && !ours.has(pid)).length;
  return { mib, otherApiServers };
}

/** Samples every `everyMs` until the returned function is called: peak MiB by process name and in total. */
export function startPeakMemory(everyMs = 2_000): () => {
  peakTotalMiB: number;
  peakMiB: Record<string, number>;
  /** Of the samples, the share that saw another's kube-apiserver running, and the most at once. */
  otherPlanes: { shareOfSamples: number; most: number };
} {
  const peak: Record<string, number> = {};
  let peakTotal = 0;
  const others = { samples: 0, seen: 0, most: 0 };
  const take = () => {
    const { mib: s, otherApiServers } = sample();
    others.samples++;
    if (otherApiServers > 0) others.seen++;
    others.most = Math.max(others.most, otherApiServers);
    for (const [name, mib] of Object.entries(s)) peak[name] = Math.max(peak[name] ?? 0, mib);
    peakTotal = Math.max(
      peakTotal,
      Object.values(s).reduce((t, x) => t + x, 0),
    );
  };
  take();
  const timer = setInterval(take, everyMs);
  return () => {
    clearInterval(timer);
    take();
    return {
      peakTotalMiB: Math.round(peakTotal),
      peakMiB: Object.fromEntries(
        Object.entries(peak)
          .sort(([, x], [, y]) => y - x)
          .map(([name, mib]) => [name, Math.round(mib)]),
      ),
      otherPlanes: { shareOfSamples: Math.round((100 * others.seen) / others.samples) / 100, most: others.most },
    };
  };
}
