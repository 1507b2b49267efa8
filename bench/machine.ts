// This machine is shared (2 cores): others run a real control plane for their tests at times.
// A bench plane beside theirs would measure both, so each plane of ours waits until no
// kube-apiserver runs. Nothing is ever stopped here: only waited for.
import { execFileSync } from 'node:child_process';

/** PIDs of the kube-apiserver processes running now (pgrep -x: the exact process name). */
export function runningApiServers(): string[] {
  try {
    return execFileSync('pgrep', ['-x', 'kube-apiserver'], { encoding: 'utf8' }).trim().split('\n').filter(Boolean);
  } catch (error) {
    // pgrep exits 1 when nothing matched.
    if ((error as { status?: number }).status === 1) return [];
    throw error;
  }
}

/** Waits (polling every 30 s) until no kube-apiserver runs; fails after `maxMinutes`. 0: no wait. */
export async function waitForNoOtherPlane(
  say: (line: string) => void,
  maxMinutes: number,
  pollMs = 30_000,
): Promise<void> {
  if (maxMinutes <= 0) return;
  const deadline = Date.now() + maxMinutes * 60_000;
  for (let pids = runningApiServers(); pids.length > 0; pids = runningApiServers()) {
    if (Date.now() >= deadline)
      throw new Error(
        `a kube-apiserver (pid ${pids.join(', ')}) still runs after ${maxMinutes} minutes; not starting a plane beside it`,
      );
    say(
      `another control plane runs (kube-apiserver pid ${pids.join(', ')}); waiting, polling every ${pollMs / 1000} s (at most ${maxMinutes} min)`,
    );
    await new Promise((resolve) => setTimeout(resolve, Math.min(pollMs, Math.max(0, deadline - Date.now()))));
  }
}
