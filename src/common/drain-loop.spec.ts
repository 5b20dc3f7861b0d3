import { DrainLoop } from './drain-loop.js';

/** Resolves once the loop's run (if any) has ended. */
async function idle(loop: { running: boolean }): Promise<void> {
  while (loop.running) await new Promise((resolve) => setImmediate(resolve));
}

describe('DrainLoop', () => {
  it('takes every piece queued while it runs, in order, one at a time', async () => {
    const queue = [1, 2];
    const seen: number[] = [];
    let concurrent = 0;
    const loop = new DrainLoop(
      () => queue.shift(),
      async (piece: number) => {
        concurrent++;
        expect(concurrent).toBe(1);
        await Promise.resolve();
        // Queued during the run, after its check for more: the same run takes it.
        if (piece === 2) queue.push(3);
        seen.push(piece);
        concurrent--;
      },
    );
    loop.kick();
    loop.kick();
    await idle(loop);
    expect(seen).toEqual([1, 2, 3]);
    expect(loop.running).toBe(false);
  });

  it('starts a new run when kicked after the last one ended', async () => {
    const queue: string[] = [];
    const seen: string[] = [];
    const loop = new DrainLoop(
      () => queue.shift(),
      (piece: string) => {
        seen.push(piece);
        return Promise.resolve();
      },
    );
    queue.push('a');
    loop.kick();
    await idle(loop);
    queue.push('b');
    loop.kick();
    await idle(loop);
    expect(seen).toEqual(['a', 'b']);
  });

  it('ends a run on a failure, reports it, and runs again on the next kick', async () => {
    const queue = ['bad', 'good'];
    const errors: unknown[] = [];
    const seen: string[] = [];
    const loop = new DrainLoop(
      () => queue.shift(),
      (piece: string) => {
        if (piece === 'bad') return Promise.reject(new Error('failed'));
        seen.push(piece);
        return Promise.resolve();
      },
      (error) => errors.push(error),
    );
    loop.kick();
    await idle(loop);
    expect(errors).toEqual([new Error('failed')]);
    expect(seen).toEqual([]);
    loop.kick();
    await idle(loop);
    expect(seen).toEqual(['good']);
  });

  it('takes nothing more once stopped, and stop waits for the piece under way', async () => {
    const queue = [1, 2, 3];
    const seen: number[] = [];
    let release!: () => void;
    const loop = new DrainLoop(
      () => queue.shift(),
      (piece: number) =>
        new Promise<void>((resolve) => {
          seen.push(piece);
          release = resolve;
        }),
    );
    loop.kick();
    const stopped = loop.stop();
    release();
    await stopped;
    loop.kick();
    expect(seen).toEqual([1]);
    expect(queue).toEqual([2, 3]);
  });
});
