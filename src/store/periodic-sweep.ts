/**
 * A background sweep: once at once, then every `everyMs` until closed. A sweep still under way when the next is due
 * lets that one pass (its work waits for the following one); a failure is logged with `failed` while open; close()
 * waits for the sweep under way. `sweep` is told whether to keep going (false once closing).
 */
export function periodicSweep(sweep: (isOpen: () => boolean) => Promise<unknown>, everyMs: number, failed: string): { close(): Promise<void> } {
  let closed = false;
  let running: Promise<unknown> | undefined;
  const isOpen = () => !closed;
  const tick = () => {
    if (running) return;
    running = sweep(isOpen)
      .catch((error) => {
        if (!closed) console.error(`[flowgate] ${failed}:`, error);
      })
      .finally(() => (running = undefined));
  };
  tick();
  const timer = setInterval(tick, everyMs);
  timer.unref();
  return {
    async close() {
      closed = true;
      clearInterval(timer);
      await running;
    },
  };
}
