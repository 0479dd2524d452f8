/**
 * Reads the Prometheus text exposition format a server's `logs.metrics`
 * answers with: each sample's metric name and labels, so names, label names
 * and label values can be searched and counted (SYNC-OPS-005).
 */
export interface MetricSample {
  name: string;
  labels: Record<string, string>;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+\S+(?:\s+-?\d+)?$/;
const LABEL = /\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*(?:,|$)/y;

/** One entry per non-comment line: a sample, or why the line is not one. */
export function parseExposition(text: string): (MetricSample | { error: string })[] {
  const out: (MetricSample | { error: string })[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '' || line.startsWith('#')) continue;
    const match = SAMPLE.exec(line);
    if (!match?.[1]) {
      out.push({ error: `not a sample: ${line.slice(0, 200)}` });
      continue;
    }
    const labels: Record<string, string> = {};
    const body = match[2] ?? '';
    LABEL.lastIndex = 0;
    while (LABEL.lastIndex < body.length) {
      const label = LABEL.exec(body);
      if (!label?.[1]) break;
      labels[label[1]] = (label[2] ?? '').replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    }
    if (LABEL.lastIndex < body.length && body.slice(LABEL.lastIndex).trim() !== '') out.push({ error: `unreadable labels: ${line.slice(0, 200)}` });
    else out.push({ name: match[1], labels });
  }
  return out;
}
