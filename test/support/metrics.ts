import { http } from './http.js';

/** The value of one sample line of the Prometheus text, e.g. `name{label="x"}`: 0 when absent. */
export function sample(metrics: string, series: string): number {
  const line = metrics.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}

/** One series of an application's /api/metrics. */
export async function metric(baseUrl: string, series: string): Promise<number> {
  return sample((await http<string>(`${baseUrl}/api/metrics`)).text, series);
}
