// A demo's live timeline: each line printed with its source and seconds since the start, and kept for the timeline file.

export interface TimelineEntry {
  readonly atSeconds: number;
  readonly source: string;
  readonly what: string;
}

export function startTimeline(): { readonly timeline: TimelineEntry[]; say(line: string, source?: string): void } {
  const t0 = Date.now();
  const timeline: TimelineEntry[] = [];
  const say = (line: string, source = 'demo') => {
    const atSeconds = Math.round((Date.now() - t0) / 100) / 10;
    timeline.push({ atSeconds, source, what: line });
    console.log(`[${source.padEnd(11)} ${atSeconds.toFixed(1).padStart(5)}s] ${line}`);
  };
  return { timeline, say };
}
