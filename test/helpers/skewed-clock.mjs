// Preloaded (`node --import`) into a gateway process to give it a host clock that is off by
// FLOWGATE_TEST_CLOCK_SKEW_MS, as a machine without time sync would have: Date.now() and `new Date()`
// read that much ahead (or behind). Timers and durations (the monotonic clock) are untouched, as on such a host.
// With FLOWGATE_TEST_CLOCK_SKEW_MARK, the process's clock as it reads it is written to that file, so a test can check it.
import fs from 'node:fs';

const skew = Number(process.env.FLOWGATE_TEST_CLOCK_SKEW_MS ?? 0);
const RealDate = globalThis.Date;
class SkewedDate extends RealDate {
  constructor(...args) {
    if (args.length === 0) super(RealDate.now() + skew);
    else super(...args);
  }
  static now() {
    return RealDate.now() + skew;
  }
}
globalThis.Date = SkewedDate;

if (process.env.FLOWGATE_TEST_CLOCK_SKEW_MARK) fs.writeFileSync(process.env.FLOWGATE_TEST_CLOCK_SKEW_MARK, String(Date.now()));
