import v8 from 'node:v8';
import vm from 'node:vm';

/**
 * The real `process`: Jest gives each test file a copy whose listeners never hear the
 * process-wide 'unhandledRejection' and 'uncaughtException' events, so spies go on this one.
 */
const realProcess = vm.runInThisContext('process') as NodeJS.Process;

export interface ProcessSpies {
  rejections: unknown[];
  exceptions: unknown[];
  stop(): void;
}

/** Records every unhandled rejection and uncaught exception until `stop()`. */
export function spyOnProcessFailures(): ProcessSpies {
  const rejections: unknown[] = [];
  const exceptions: unknown[] = [];
  const onRejection = (reason: unknown) => rejections.push(reason);
  const onException = (error: unknown) => exceptions.push(error);
  realProcess.on('unhandledRejection', onRejection);
  realProcess.on('uncaughtException', onException);
  return {
    rejections,
    exceptions,
    stop: () => {
      realProcess.off('unhandledRejection', onRejection);
      realProcess.off('uncaughtException', onException);
    },
  };
}

let gc: (() => void) | undefined;

/**
 * Forces a full garbage collection. Jest is not started with --expose-gc, so the flag is
 * turned on at run time and `gc` is taken from a fresh context, which then has it.
 */
export function collectGarbage(): void {
  if (!gc) {
    v8.setFlagsFromString('--expose-gc');
    gc = vm.runInNewContext('gc') as () => void;
  }
  gc();
}
