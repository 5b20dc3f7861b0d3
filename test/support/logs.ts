import type { ServiceProcess } from './service-process.js';

/** One JSON log line of a service. */
export interface LogLine {
  level: number;
  msg: string;
  context?: string;
  req?: { id: string };
  reqId?: string;
  [field: string]: unknown;
}

/** The JSON log lines a service wrote to its stdout so far. */
export function logLines(service: ServiceProcess): LogLine[] {
  return service.stdout
    .split('\n')
    .filter((line) => line.startsWith('{') && line.endsWith('}'))
    .map((line) => JSON.parse(line) as LogLine);
}
