/** A count as people write it: 10,000. */
export const n = (x) => x.toLocaleString('en-US');

// The outputs of a run: one JSON record per scenario and a markdown table, with the
// service ÷ baseline ratio of each figure and whether the issue's target is met.

function ratioOf(service, baseline) {
  if (
    typeof service !== 'number' ||
    typeof baseline !== 'number' ||
    !Number.isFinite(service) ||
    !Number.isFinite(baseline)
  ) {
    return null;
  }
  if (baseline === 0) {
    return service === 0 ? 1 : null;
  }
  if (service < 0 || baseline < 0) {
    return null; // e.g. a memory drift that went down: a ratio would say nothing
  }
  return Math.round((service / baseline) * 100) / 100;
}

function verdict(metric, ratio) {
  if (!metric.target || ratio === null) {
    return null;
  }
  const { op, ratio: bound } = metric.target;
  return op === '<=' ? ratio <= bound : ratio >= bound;
}

export function scenarioRecord(scenario, mode, params, results) {
  const service = results.service;
  const baseline = results.baseline;
  const ratios = {};
  const targets = {};
  for (const metric of scenario.metrics) {
    const r = ratioOf(service?.[metric.key], baseline?.[metric.key]);
    if (r !== null) {
      ratios[metric.key] = r;
    }
    if (metric.target) {
      targets[metric.key] = {
        target: `${metric.target.op} ${metric.target.ratio}×`,
        met: verdict(metric, r),
      };
    }
  }
  return {
    scenario: scenario.name,
    mode,
    params,
    service: service ?? null,
    baseline: baseline ?? null,
    ratios,
    targets,
  };
}

export function fmt(value, unit = '') {
  if (
    value === undefined ||
    value === null ||
    (typeof value === 'number' && !Number.isFinite(value))
  ) {
    return '–';
  }
  if (typeof value === 'boolean') {
    return value ? 'yes' : '**no**';
  }
  if (typeof value !== 'number') {
    return String(value);
  }
  const abs = Math.abs(value);
  let text;
  if (Number.isInteger(value) || abs >= 1000) {
    text = Math.round(value).toLocaleString('en-US');
  } else if (abs >= 100) {
    text = value.toFixed(0);
  } else if (abs >= 10) {
    text = value.toFixed(1);
  } else if (abs >= 1) {
    text = value.toFixed(2);
  } else {
    text = value.toPrecision(2);
  }
  return unit && unit !== '×' ? `${text} ${unit}` : unit === '×' ? `${text}×` : text;
}

function cell(result, metric) {
  if (!result) {
    return 'not run';
  }
  if (result.error) {
    return 'error';
  }
  const disturbed = result.foreignCpuPct > BUSY_PCT ? ' ⚠' : '';
  return `${fmt(result[metric.key], metric.unit)}${disturbed}`;
}

export function renderMarkdown({ info, mode, records, scenarios, elapsedS, targets }) {
  const lines = [];
  lines.push(
    `### ${mode === 'full' ? 'Full run' : mode === 'quick' ? 'Quick run (--quick)' : 'Soak run (--soak)'}, ${info.date.slice(0, 10)}`,
  );
  lines.push('');
  lines.push(
    `Machine: ${info.cpus} CPUs (${info.cpuModel}), ${info.memoryGiB} GiB, Linux ${info.kernel}, Node ${info.node}, ` +
      `Postgres ${info.postgres} (synchronous_commit ${info.synchronousCommit}), Redis ${info.redis}, ` +
      `fd limit ${info.fdLimit}. Commit ${info.commit}. ` +
      `Targets: ${targets.map((t) => `${t.name} = \`${t.display ?? t.argv.join(' ')}\``).join(', ')}. Run time ${elapsedS} s.`,
  );
  lines.push('');
  lines.push('| Scenario | Figure | Service | Baseline | Service ÷ baseline | Target | Met |');
  lines.push('|---|---|---:|---:|---:|---|---|');
  const notes = [];
  for (const record of records) {
    const scenario = scenarios.find((s) => s.name === record.scenario);
    scenario.metrics.forEach((metric, i) => {
      const r = record.ratios[metric.key];
      const t = record.targets[metric.key];
      lines.push(
        `| ${i === 0 ? scenario.title(record.params) : ''} | ${metric.label} | ${cell(record.service, metric)} | ${cell(record.baseline, metric)} | ` +
          `${r === undefined ? '–' : fmt(r, '×')} | ${t ? `${t.target}` : ''} | ${t ? (t.met === null ? '–' : t.met ? 'met' : '**missed**') : ''} |`,
      );
    });
    for (const side of ['service', 'baseline']) {
      if (record[side]?.error) {
        notes.push(
          `- ${record.scenario}, ${side}: error: ${record[side].error.replace(/\|/g, '/')}`,
        );
      }
    }
    for (const side of ['service', 'baseline']) {
      const pct = record[side]?.foreignCpuPct;
      if (pct > BUSY_PCT) {
        notes.push(
          `- ${record.scenario}, ${side}: ⚠ other processes used ${pct} % of a core during the run ` +
            `(${record[side].foreignCpuTop.join(', ')}): its figures are disturbed.`,
        );
      }
    }
    const cap = record.service?.cappedByFdLimit || record.baseline?.cappedByFdLimit;
    if (cap) {
      const r = record.service?.cappedByFdLimit ? record.service : record.baseline;
      notes.push(
        `- ${record.scenario}: ${r.requested.toLocaleString('en-US')} listeners asked; capped at ${r.listeners.toLocaleString('en-US')} ` +
          `by the server's file-descriptor limit (${r.serverFdLimit}; the hard limit cannot be raised in this environment).`,
      );
    }
  }
  if (notes.length) {
    lines.push('');
    lines.push(...notes);
  }
  lines.push('');
  lines.push(
    'Every figure of every run is in the JSON lines (stdout, and `bench/results/*.jsonl`).',
  );
  return lines.join('\n');
}

/** Foreign CPU (% of one core) above which a run is flagged as disturbed. */
const BUSY_PCT = 10;

const START = (mode) => `<!-- bench:${mode}:start -->`;
const END = (mode) => `<!-- bench:${mode}:end -->`;

/** Replaces this mode's block of BENCHMARKS.md (between its markers), or appends one. */
export function updateBenchmarksFile(text, mode, markdown) {
  const block = `${START(mode)}\n${markdown}\n${END(mode)}`;
  const a = text.indexOf(START(mode));
  const b = text.indexOf(END(mode));
  if (a !== -1 && b > a) {
    return text.slice(0, a) + block + text.slice(b + END(mode).length);
  }
  const base = text.trim() ? text.replace(/\s*$/, '\n\n') : '# Benchmarks\n\n';
  return `${base}${block}\n`;
}
