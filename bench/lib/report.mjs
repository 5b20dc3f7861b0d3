/** A count as people write it: 10,000. */
export const n = (x) => x.toLocaleString('en-US');

// The outputs of a run: one JSON record per scenario and one markdown table, with the
// service's figure, every other side's, service ÷ that side, and whether the issues'
// targets are met.

/**
 * The sides a scenario can be run against, in table order. The service is compared with
 * each other side; `baseline` is the one the targets are stated against.
 */
export const SIDES = [
  { name: 'service', label: 'Service' },
  { name: 'baseline', label: 'Baseline (res.write)', ratioLabel: 'Service ÷ baseline' },
  {
    name: 'baseline-socket',
    label: 'Baseline (socket writes)',
    ratioLabel: 'Service ÷ socket writes',
  },
  {
    name: 'baseline-nest',
    label: 'Baseline (Nest)',
    ratioLabel: 'Service ÷ Nest',
  },
  { name: 'nchan', label: 'nchan', ratioLabel: 'Service ÷ nchan' },
];
const OTHERS = SIDES.slice(1).map((s) => s.name);

function ratioOf(service, other) {
  if (
    typeof service !== 'number' ||
    typeof other !== 'number' ||
    !Number.isFinite(service) ||
    !Number.isFinite(other)
  ) {
    return null;
  }
  if (other === 0) {
    return service === 0 ? 1 : null;
  }
  if (service < 0 || other < 0) {
    return null; // e.g. a memory drift that went down: a ratio would say nothing
  }
  return Math.round((service / other) * 100) / 100;
}

/**
 * A metric's target is either a ratio to another side (`{ op, ratio, of }`, the baseline
 * unless `of` names another) or a bound on the service's own figure (`{ op, value }`, in the
 * metric's unit).
 */
function targetText(metric) {
  const { op, ratio, value, of = 'baseline' } = metric.target;
  const sign = op === '<=' ? '≤' : '≥';
  if (ratio !== undefined) {
    return `${sign} ${ratio}× ${of}`;
  }
  return `${sign} ${value}${metric.unit === '×' ? '×' : ` ${metric.unit}`}`;
}

function verdict(metric, service, ratios) {
  const { op, ratio, value, of = 'baseline' } = metric.target;
  const x = ratio !== undefined ? ratios[of]?.[metric.key] : service?.[metric.key];
  const bound = ratio ?? value;
  if (typeof x !== 'number' || !Number.isFinite(x)) {
    return null;
  }
  return op === '<=' ? x <= bound : x >= bound;
}

export function scenarioRecord(scenario, mode, params, results) {
  const service = results.service;
  const ratios = {};
  for (const side of OTHERS) {
    if (!results[side]) {
      continue;
    }
    ratios[side] = {};
    for (const metric of scenario.metrics) {
      const r = ratioOf(service?.[metric.key], results[side][metric.key]);
      if (r !== null) {
        ratios[side][metric.key] = r;
      }
    }
  }
  const targets = {};
  for (const metric of scenario.metrics.filter((m) => m.target)) {
    targets[metric.key] = { target: targetText(metric), met: verdict(metric, service, ratios) };
  }
  const targetKeys = scenario.metrics.filter((m) => m.target).map((m) => m.key);
  return { scenario: scenario.name, mode, params, results, ratios, targets, targetKeys };
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

/** A side's figure; blank where the side does not run this scenario. */
function cell(result, metric) {
  if (!result) {
    return '';
  }
  if (result.skipped) {
    return 'skipped';
  }
  if (result.error) {
    return 'error';
  }
  const disturbed = result.foreignCpuPct > BUSY_PCT ? ' ⚠' : '';
  return `${fmt(result[metric.key], metric.unit)}${disturbed}`;
}

/**
 * One side's result over several rounds of a scenario: each figure the median of the
 * rounds', each yes/no figure yes only if every round said yes, the busiest round's
 * foreign CPU; the rounds' own values of the targeted figures are kept beside it. A round
 * that failed or was skipped stands for the whole.
 */
export function medianOfRounds(rounds, metrics) {
  const failed = rounds.find((r) => r.error || r.skipped);
  if (rounds.length === 1 || failed) {
    return failed ?? rounds[0];
  }
  const merged = { ...rounds[0], rounds: rounds.length, roundValues: {} };
  for (const { key } of metrics) {
    const values = rounds.map((r) => r[key]);
    if (values.every((v) => typeof v === 'boolean')) {
      merged[key] = values.every(Boolean);
    } else if (values.every((v) => typeof v === 'number' && Number.isFinite(v))) {
      const sorted = [...values].sort((a, b) => a - b);
      const mid = sorted.length >> 1;
      merged[key] = sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
      merged.roundValues[key] = values;
    }
  }
  const busiest = rounds.reduce((a, b) =>
    (b.foreignCpuPct ?? 0) > (a.foreignCpuPct ?? 0) ? b : a,
  );
  merged.foreignCpuPct = busiest.foreignCpuPct;
  merged.foreignCpuTop = busiest.foreignCpuTop;
  return merged;
}

function runNotes(record) {
  const notes = [];
  const { results } = record;
  const rounds = Object.values(results).find((r) => r?.rounds > 1)?.rounds;
  if (rounds) {
    const spread = Object.entries(results)
      .filter(([, r]) => r?.roundValues)
      .flatMap(([side, r]) =>
        record.targetKeys.map(
          (key) => `${side} ${r.roundValues[key].map((v) => fmt(v)).join(' / ')}`,
        ),
      );
    notes.push(
      `- ${record.scenario}: the median of ${rounds} rounds, the sides in alternating order; ` +
        `the rounds' ${record.targetKeys.join(', ')}: ${spread.join('; ')}.`,
    );
  }
  for (const [side, result] of Object.entries(results)) {
    if (result?.error) {
      notes.push(`- ${record.scenario}, ${side}: error: ${result.error.replace(/\|/g, '/')}`);
    }
    if (result?.foreignCpuPct > BUSY_PCT) {
      notes.push(
        `- ${record.scenario}, ${side}: ⚠ other processes used ${result.foreignCpuPct} % of a core during the run ` +
          `(${result.foreignCpuTop.join(', ')}): its figures are disturbed.`,
      );
    }
  }
  const capped = Object.values(results).find((r) => r?.cappedByFdLimit);
  if (capped) {
    notes.push(
      `- ${record.scenario}: ${n(capped.requested)} listeners asked; capped at ${n(capped.listeners)} ` +
        `by the server's file-descriptor limit (${capped.serverFdLimit}; the hard limit cannot be raised in this environment).`,
    );
  }
  return notes;
}

const MODE_NAMES = { full: 'Full run', quick: 'Quick run (--quick)', soak: 'Soak run (--soak)' };

/**
 * The run's block of BENCHMARKS.md: one line naming the run and the machine, then the one
 * table: every scenario and figure, each side's value, service ÷ each other side, the target
 * and whether it is met. Only the columns of the sides in this run. What the run's figures
 * need said besides (rounds, caps, errors, disturbance) is in `renderNotes`.
 */
export function renderMarkdown({ info, mode, records, scenarios, elapsedS, targets }) {
  const sides = SIDES.filter((s) => targets.some((t) => t.name === s.name));
  const others = sides.filter((s) => s.name !== 'service');
  const hasService = sides.some((s) => s.name === 'service');
  const lines = [];
  lines.push(
    `${MODE_NAMES[mode]}, ${info.date.slice(0, 10)}, commit ${info.commit}, ${elapsedS} s. ` +
      `Machine: ${info.cpus} CPUs (${info.cpuModel}), ${info.memoryGiB} GiB, Linux ${info.kernel}, Node ${info.node}, NestJS ${info.nest}, ` +
      `Postgres ${info.postgres} (synchronous_commit ${info.synchronousCommit}), Redis ${info.redis}, ` +
      `fd limit ${info.fdLimit}. Sides: ` +
      `${targets.map((t) => `${t.name} = ${t.display}`).join('; ')}.`,
  );
  lines.push('');
  const header = ['Scenario', 'Figure'];
  const align = ['---', '---'];
  for (const side of sides) {
    header.push(side.label);
    align.push('---:');
    if (side.name !== 'service' && hasService) {
      header.push(side.ratioLabel);
      align.push('---:');
    }
  }
  header.push('Target', 'Met');
  align.push('---', '---');
  lines.push(`| ${header.join(' | ')} |`, `| ${align.join(' | ')} |`);
  for (const record of records) {
    const scenario = scenarios.find((s) => s.name === record.scenario);
    scenario.metrics.forEach((metric, i) => {
      const row = [i === 0 ? scenario.title(record.params) : '', metric.label];
      if (hasService) {
        row.push(cell(record.results.service, metric));
      }
      for (const side of others) {
        row.push(cell(record.results[side.name], metric));
        if (hasService) {
          const r = record.ratios[side.name]?.[metric.key];
          row.push(r === undefined ? (record.results[side.name] ? '–' : '') : fmt(r, '×'));
        }
      }
      const t = record.targets[metric.key];
      row.push(t?.target ?? '', t ? (t.met === null ? '–' : t.met ? 'met' : '**missed**') : '');
      lines.push(`| ${row.join(' | ')} |`);
    });
  }
  return lines.join('\n');
}

/**
 * What the table's figures need said besides, one line each, for the console: each round's
 * values where a figure is a median, listener counts capped by the descriptor limit, errors,
 * runs other processes disturbed, sides skipped.
 */
export function renderNotes({ records, targets }) {
  const notes = records.flatMap(runNotes);
  for (const t of targets.filter((x) => x.skipped)) {
    notes.push(`- ${t.name}: skipped: ${t.skipped}.`);
  }
  return notes;
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
