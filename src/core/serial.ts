/** Runs async calls one at a time, in call order; a call that fails does not stop the ones queued after it. */
export function serialQueue(): <T>(f: () => Promise<T>) => Promise<T> {
  let tail: Promise<unknown> = Promise.resolve();
  return <T>(f: () => Promise<T>): Promise<T> => {
    const run = tail.then(f, f);
    tail = run.catch(() => {});
    return run;
  };
}
