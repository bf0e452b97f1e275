/**
 * Yields to the macrotask queue. The loop's awaits on CPU work resolve as microtasks, which would starve
 * timers and messages (a page's or worker's pause / stop, a UI frame); the loop calls this between phases,
 * rollouts and micro-batches.
 */
export function tick(): Promise<void> {
  return new Promise((resolve) => {
    if (typeof setImmediate === 'function') setImmediate(resolve);
    else setTimeout(resolve, 0);
  });
}
