// Where a machine's CPU goes, by process name: utime+stime from /proc/<pid>/stat, read before
// and after a stretch of work. The wave bench uses it to tell the control plane's share from
// the share of this process (which plays the Lambda containers) on a machine that has both.
import { readdirSync, readFileSync } from 'node:fs';

/** Clock ticks per second: USER_HZ, 100 on Linux. */
const ticksPerSecond = 100;

function sample(): Map<number, { name: string; ticks: number }> {
  const out = new Map<number, { name: string; ticks: number }>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // The name is in parentheses and may hold spaces; the fields after it are space-separated.
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      out.set(Number(entry), { name, ticks: Number(fields[11]) + Number(fields[12]) });
    } catch {
      /* gone meanwhile */
    }
  }
  return out;
}

/** Starts counting; the function it returns gives CPU seconds per process name since then (this process as "bench (Lambda stand-in)"). */
export function startCpuCount(): () => Record<string, number> {
  const before = sample();
  return () => {
    const after = sample();
    const seconds: Record<string, number> = {};
    for (const [pid, { name, ticks }] of after) {
      const used = ticks - (before.get(pid)?.ticks ?? 0);
      if (used <= 0) continue;
      const key = pid === process.pid ? 'bench (Lambda stand-in)' : name;
      seconds[key] = Math.round(((seconds[key] ?? 0) + used / ticksPerSecond) * 10) / 10;
    }
    return Object.fromEntries(
      Object.entries(seconds)
        .sort(([, x], [, y]) => y - x)
        .slice(0, 10),
    );
  };
}
