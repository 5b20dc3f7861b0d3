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

/**
 * Spies of each test's own, started before it and stopped after it (call in a describe
 * block): a test sees only the failures that happened while it ran.
 */
export function spyOnEachTest(): Omit<ProcessSpies, 'stop'> {
  let current: ProcessSpies | undefined;
  beforeEach(() => {
    current = spyOnProcessFailures();
  });
  afterEach(() => {
    current?.stop();
    current = undefined;
  });
  const spies = () => {
    if (!current) throw new Error('Process spies are read inside a test');
    return current;
  };
  return {
    get rejections() {
      return spies().rejections;
    },
    get exceptions() {
      return spies().exceptions;
    },
  };
}

/**
 * Fails each test of the block (call it in the describe block) in which an unhandled
 * rejection or an uncaught exception happened.
 */
export function failTestsOnProcessFailures(): void {
  let spies: ProcessSpies | undefined;
  beforeEach(() => {
    spies = spyOnProcessFailures();
  });
  afterEach(() => {
    const seen = spies;
    spies = undefined;
    seen?.stop();
    expect(seen?.rejections).toEqual([]);
    expect(seen?.exceptions).toEqual([]);
  });
}

let gc: (() => void) | undefined;

/**
 * Forces a full garbage collection. Jest is not started with --expose-gc, so the flag is
 * turned on at run time, `gc` taken from a fresh context, which then has it, and the flag
 * turned off again: left on, every later context of the worker (the next test file's
 * global, say) would have a `gc` too.
 */
export function collectGarbage(): void {
  if (!gc) {
    v8.setFlagsFromString('--expose-gc');
    try {
      gc = vm.runInNewContext('gc') as () => void;
    } finally {
      v8.setFlagsFromString('--no-expose-gc');
    }
  }
  gc();
}
