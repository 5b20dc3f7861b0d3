/** Rejects when `promise` has not settled within `ms`, with `error()` if given. */
export function withTimeout<T>(promise: Promise<T>, ms: number, error?: () => Error): Promise<T> {
  let timer: NodeJS.Timeout;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(error?.() ?? new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
