// The handler's Powertools Logger writes JSON lines, INFO to stdout and WARN/ERROR to
// stderr. When the handler runs in-process (cluster tests, demo, benchmark) we take those
// lines for assertions or the timeline instead of printing them.
// The service is the deployment's name (POWERTOOLS_SERVICE_NAME, else DEPLOYMENT_NAME).
export function captureHandlerLogs(
  onLog: (entry: Record<string, unknown>) => void,
  service = 'graceful-node-termination',
): () => void {
  const streams = [process.stdout, process.stderr] as const;
  const originals = streams.map((stream) => stream.write);
  streams.forEach((stream, i) => {
    const original = originals[i]!.bind(stream) as (...args: unknown[]) => boolean;
    stream.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
      const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
      const ours = text.split('\n').filter((line) => line.startsWith('{') && line.includes(`"service":"${service}"`));
      if (ours.length === 0) return original(chunk, ...rest);
      for (const line of ours) onLog(JSON.parse(line) as Record<string, unknown>);
      return true;
    }) as typeof stream.write;
  });
  return () => streams.forEach((stream, i) => (stream.write = originals[i]!));
}
