// Loaded into each server under test with `node --expose-gc --import bench/lib/probe.mjs`.
// It answers the orchestrator's memory / event-loop questions over the IPC channel and
// does nothing else, so the service and the baseline are measured the same way.
import { performance } from 'node:perf_hooks';

if (typeof process.send === 'function') {
  process.on('message', (msg) => {
    if (!msg || msg.__benchProbe !== 1) {
      return;
    }
    if (msg.gc === 'last-resort' && typeof globalThis.gc === 'function') {
      // What V8 does under memory pressure: a full GC that also frees the pages it keeps
      // pooled for reuse (a plain full GC leaves them resident).
      globalThis.gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
    } else if (msg.gc && typeof globalThis.gc === 'function') {
      globalThis.gc();
      globalThis.gc();
    }
    const elu = performance.eventLoopUtilization();
    process.send({
      __benchProbe: 1,
      id: msg.id,
      memory: process.memoryUsage(),
      cpu: process.cpuUsage(),
      loop: { activeMs: elu.active, idleMs: elu.idle },
    });
  });
  // The channel must not keep the server alive, and a server whose orchestrator died
  // must not linger with its listeners: it stops as if told to.
  process.channel?.unref();
  process.on('disconnect', () => process.kill(process.pid, 'SIGTERM'));
}
