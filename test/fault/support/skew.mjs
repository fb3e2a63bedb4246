// Preload (node --import) that sets this process's wall clock FAULT_SKEW_MS off: Date.now() and
// new Date() are shifted, as on a Lambda host whose clock is wrong. Timers and
// performance.now() are monotonic and stay as they are, as they would on such a host.
const skew = Number(process.env.FAULT_SKEW_MS ?? 0);
const RealDate = Date;
const realNow = RealDate.now.bind(RealDate);
class SkewedDate extends RealDate {
  constructor(...args) {
    if (args.length === 0) super(realNow() + skew);
    else super(...args);
  }
  static now() {
    return realNow() + skew;
  }
}
globalThis.Date = SkewedDate;
