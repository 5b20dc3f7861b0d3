// A log-bucketed latency histogram (values in microseconds, ~1 % relative precision).
// Load processes fill one each and send it to the orchestrator as plain JSON; merging is a
// sum of bucket counts, so percentiles over many processes stay exact to the bucket width.

const GROWTH = 1.01;
const LOG_GROWTH = Math.log(GROWTH);
const BUCKETS = 2400; // 1.01^2400 µs ≈ 2.3e10 µs: far beyond any timeout used here

export class Histogram {
  constructor() {
    this.counts = new Float64Array(BUCKETS);
    this.count = 0;
    this.sum = 0;
    this.min = Infinity;
    this.max = 0;
  }

  record(valueUs) {
    const v = valueUs > 0 ? valueUs : 0;
    const i = v < 1 ? 0 : Math.min(BUCKETS - 1, 1 + Math.floor(Math.log(v) / LOG_GROWTH));
    this.counts[i] += 1;
    this.count += 1;
    this.sum += v;
    if (v < this.min) {
      this.min = v;
    }
    if (v > this.max) {
      this.max = v;
    }
  }

  /** The value at quantile q (0..1), in µs: the geometric middle of its bucket, clamped to min/max. */
  quantile(q) {
    if (this.count === 0) {
      return NaN;
    }
    const rank = Math.max(1, Math.ceil(q * this.count));
    let seen = 0;
    for (let i = 0; i < BUCKETS; i++) {
      seen += this.counts[i];
      if (seen >= rank) {
        const value = i === 0 ? 0.5 : Math.pow(GROWTH, i - 0.5);
        return Math.min(this.max, Math.max(this.min, value));
      }
    }
    return this.max;
  }

  merge(other) {
    const o = other instanceof Histogram ? other : Histogram.fromJSON(other);
    for (let i = 0; i < BUCKETS; i++) {
      this.counts[i] += o.counts[i];
    }
    this.count += o.count;
    this.sum += o.sum;
    this.min = Math.min(this.min, o.min);
    this.max = Math.max(this.max, o.max);
    return this;
  }

  toJSON() {
    const sparse = {};
    for (let i = 0; i < BUCKETS; i++) {
      if (this.counts[i] !== 0) {
        sparse[i] = this.counts[i];
      }
    }
    return { sparse, count: this.count, sum: this.sum, min: this.min, max: this.max };
  }

  static fromJSON(json) {
    const h = new Histogram();
    if (!json) {
      return h;
    }
    for (const [i, c] of Object.entries(json.sparse ?? {})) {
      h.counts[Number(i)] = c;
    }
    h.count = json.count ?? 0;
    h.sum = json.sum ?? 0;
    h.min = json.min ?? Infinity;
    h.max = json.max ?? 0;
    return h;
  }

  /** p50/p99/max/mean in milliseconds, rounded for reports. */
  summaryMs() {
    const ms = (us) => (Number.isFinite(us) ? Math.round(us) / 1000 : null);
    return {
      count: this.count,
      p50: ms(this.quantile(0.5)),
      p99: ms(this.quantile(0.99)),
      max: ms(this.count ? this.max : NaN),
      mean: ms(this.count ? this.sum / this.count : NaN),
    };
  }
}

/** Monotonic time in µs, comparable across processes on one machine (CLOCK_MONOTONIC). */
export function nowUs() {
  return Number(process.hrtime.bigint() / 1000n);
}
