// Builds the production image's file tree without a Docker engine, by reading the Dockerfile and
// running what it says: each stage in a temporary directory standing for its WORKDIR, its COPY
// lines copied (from the build context, .dockerignore applied, or from an earlier stage), its
// RUN lines run with `sh -c` there. The last stage's directory is the tree the image ships,
// written to <out-dir>; the image's configuration (ENV, CMD, USER, EXPOSE, HEALTHCHECK: each
// command as an argument list) goes to <out-dir>.image.json. `npm run test:image` runs the service from that tree.
//
// Reading the Dockerfile, not copying its commands, keeps the two from drifting apart: an
// instruction or a command this script does not understand stops it with an error, never a
// guess. What cannot be done without an image is recorded instead: file ownership (`chown`,
// `COPY --chown`: the tree belongs to whoever built it) and USER.
//
//   node scripts/image-tree.mjs <out-dir> [--keep-stages]
//
// Plain Node, no dependency: it runs before anything else is installed in a stage.
import { spawnSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, posix, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const CONTEXT = fileURLToPath(new URL('..', import.meta.url));
const DOCKERFILE = join(CONTEXT, 'Dockerfile');

/** The programs a RUN line may call: each works on the stage's directory alone. */
const PROGRAMS = new Set(['npm', 'node', 'mkdir', 'chown', 'chmod', 'cp', 'mv', 'rm', 'ln']);
/** Recorded, not run: the tree belongs to whoever built it, and there is no such user here. */
const RECORDED_PROGRAMS = new Set(['chown']);

class DockerfileError extends Error {}

const seconds = (since) => ((Date.now() - since) / 1000).toFixed(1);

function fail(line, message) {
  throw new DockerfileError(`Dockerfile line ${line}: ${message}`);
}

/**
 * The Dockerfile's instructions: `{ keyword, args, line }`, comments and parser directives
 * dropped, continued lines (ending with `\`) joined.
 */
function parse(text) {
  const instructions = [];
  let pending;
  text.split('\n').forEach((raw, index) => {
    const trimmed = raw.trim();
    if (trimmed === '' || trimmed.startsWith('#')) return;
    const continues = trimmed.endsWith('\\');
    const part = continues ? trimmed.slice(0, -1).trim() : trimmed;
    if (pending) pending.text += ` ${part}`;
    else pending = { text: part, line: index + 1 };
    if (continues) return;
    const match = /^(\S+)\s*(.*)$/.exec(pending.text);
    instructions.push({ keyword: match[1].toUpperCase(), args: match[2], line: pending.line });
    pending = undefined;
  });
  if (pending) fail(pending.line, 'the last instruction continues past the end of the file');
  return instructions;
}

/** `--name=value` flags at the start of `args`, and what follows them. */
function flagsOf(args, allowed, line) {
  const flags = {};
  let rest = args;
  for (
    let match;
    (match = /^--([a-z-]+)=(\S+)\s+/.exec(rest));
    rest = rest.slice(match[0].length)
  ) {
    if (!allowed.includes(match[1])) fail(line, `--${match[1]} is not understood here`);
    flags[match[1]] = match[2];
  }
  if (rest.startsWith('--')) fail(line, `${rest.split(/\s/)[0]} is not understood here`);
  return { flags, rest };
}

/** ENV's `KEY=value …` (values plain or double-quoted) or `KEY value`. */
function envOf(args, line) {
  if (!args.includes('=')) {
    const [key, ...value] = args.split(/\s+/);
    return [[key, value.join(' ')]];
  }
  const pairs = [];
  const pair = /\s*([A-Za-z_][A-Za-z0-9_]*)=(?:"((?:[^"\\]|\\.)*)"|([^\s"'\\$]*))(?=\s|$)/y;
  let match;
  while (pair.lastIndex < args.length && (match = pair.exec(args))) {
    pairs.push([match[1], match[2]?.replace(/\\(.)/g, '$1') ?? match[3]]);
  }
  if (pair.lastIndex < args.trimEnd().length || pairs.length === 0) {
    fail(line, `ENV ${args}: not understood (KEY=value or KEY="value", no expansion)`);
  }
  return pairs;
}

/** The JSON (exec) form of CMD, or the shell form as Docker runs it. */
function commandOf(args) {
  if (args.startsWith('[')) return JSON.parse(args);
  return ['/bin/sh', '-c', args];
}

/**
 * The stages and the image's configuration, checked before anything runs: an instruction
 * not understood stops the build before it starts.
 */
function plan(instructions) {
  const stages = [];
  const config = {
    Env: [],
    Cmd: undefined,
    User: undefined,
    ExposedPorts: [],
    Healthcheck: undefined,
    WorkingDir: undefined,
    NotReproduced: [],
  };
  let stage;
  for (const { keyword, args, line } of instructions) {
    if (keyword === 'FROM') {
      const match = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(args);
      if (!match) fail(line, `FROM ${args}: not understood`);
      const node = /^node:(\d+)(?:[-.][\w.-]*)?$/.exec(match[1]);
      if (!node) fail(line, `FROM ${match[1]}: only node:<major>… images are understood`);
      const major = process.versions.node.split('.')[0];
      if (node[1] !== major) {
        fail(line, `FROM ${match[1]} needs Node ${node[1]}; this is Node ${process.versions.node}`);
      }
      stage = { name: match[2], index: stages.length, steps: [], env: {}, workdir: undefined };
      stages.push(stage);
      // Each stage starts from the base image: only the last one's settings are the image's.
      Object.assign(config, {
        Env: [],
        Cmd: undefined,
        User: undefined,
        ExposedPorts: [],
        Healthcheck: undefined,
        NotReproduced: [],
      });
      continue;
    }
    if (!stage) fail(line, `${keyword} before FROM`);
    switch (keyword) {
      case 'WORKDIR':
        if (!posix.isAbsolute(args)) fail(line, `WORKDIR ${args}: only an absolute path`);
        if (stage.workdir !== undefined && posix.normalize(args) !== stage.workdir) {
          fail(line, `a second WORKDIR in one stage (${args} after ${stage.workdir})`);
        }
        stage.workdir = posix.normalize(args);
        config.WorkingDir = stage.workdir;
        break;
      case 'ENV':
        for (const [key, value] of envOf(args, line)) {
          stage.steps.push({ kind: 'env', key, value, line });
          config.Env = config.Env.filter((e) => !e.startsWith(`${key}=`)).concat(`${key}=${value}`);
        }
        break;
      case 'COPY': {
        if (!stage.workdir) fail(line, 'COPY before WORKDIR');
        const { flags, rest } = flagsOf(args, ['from', 'chown'], line);
        if (rest.startsWith('[')) fail(line, 'the JSON form of COPY is not understood');
        const paths = rest.split(/\s+/);
        if (paths.length < 2) fail(line, `COPY ${args}: a source and a destination`);
        const dest = paths.pop();
        if (paths.length > 1 && !dest.endsWith('/')) {
          fail(line, 'COPY of several sources needs a destination ending with /');
        }
        for (const source of paths) {
          if (/[*?[\]]/.test(source)) fail(line, `COPY ${source}: wildcards are not understood`);
        }
        let from;
        if (flags.from !== undefined) {
          from = stages.find((s) => s.name === flags.from || String(s.index) === flags.from);
          if (!from || from === stage) fail(line, `COPY --from=${flags.from}: no earlier stage`);
        }
        if (flags.chown) config.NotReproduced.push(`line ${line}: COPY --chown=${flags.chown}`);
        stage.steps.push({ kind: 'copy', from, sources: paths, dest, line });
        break;
      }
      case 'RUN': {
        if (!stage.workdir) fail(line, 'RUN before WORKDIR');
        if (args.startsWith('[')) fail(line, 'the JSON form of RUN is not understood');
        const programs = programsOf(args, line);
        localized(args, stage.workdir, stage.workdir, line); // refuses paths outside it now
        for (const program of programs.filter((p) => RECORDED_PROGRAMS.has(p))) {
          config.NotReproduced.push(`line ${line}: ${program} (RUN ${args})`);
        }
        stage.steps.push({ kind: 'run', command: args, line });
        break;
      }
      case 'USER':
        config.User = args;
        config.NotReproduced.push(`line ${line}: USER ${args} (the tree runs as its builder)`);
        break;
      case 'EXPOSE':
        config.ExposedPorts.push(...args.split(/\s+/));
        break;
      case 'HEALTHCHECK': {
        if (args === 'NONE') {
          config.Healthcheck = undefined;
          break;
        }
        const { flags, rest } = flagsOf(
          args,
          ['interval', 'timeout', 'start-period', 'start-interval', 'retries'],
          line,
        );
        if (!rest.startsWith('CMD ')) fail(line, `HEALTHCHECK ${args}: not understood`);
        config.Healthcheck = { ...flags, Test: commandOf(rest.slice(4).trim()) };
        break;
      }
      case 'CMD':
        config.Cmd = commandOf(args);
        break;
      default:
        fail(
          line,
          `${keyword} is not understood by scripts/image-tree.mjs: teach it, or keep to FROM, WORKDIR, COPY, RUN, ENV, USER, EXPOSE, HEALTHCHECK and CMD`,
        );
    }
  }
  if (!stage) throw new DockerfileError('The Dockerfile has no FROM');
  if (!stage.workdir) throw new DockerfileError('The last stage has no WORKDIR');
  if (!config.Cmd) throw new DockerfileError('The image has no CMD');
  return { stages, config };
}

/**
 * The programs a RUN line calls, each checked against PROGRAMS; a line this cannot take apart
 * (command substitution, subshells, redirections) is refused, not guessed at.
 */
function programsOf(command, line) {
  if (/[`$(){}<>]/.test(command)) {
    fail(line, `RUN ${command}: substitutions, subshells and redirections are not understood`);
  }
  return command.split(/&&|\|\||[;|\n]/).map((part) => {
    const words = part.trim().split(/\s+/);
    const program = words.find((word) => !/^[A-Za-z_][A-Za-z0-9_]*=/.test(word));
    if (!program || !PROGRAMS.has(program)) {
      fail(line, `RUN ${command}: "${program ?? part}" is not one of ${[...PROGRAMS].join(', ')}`);
    }
    return program;
  });
}

/**
 * `command` with the stage's WORKDIR (as an absolute path) replaced by its directory; an
 * absolute path anywhere else would reach outside the stage, so it is refused.
 */
function localized(command, workdir, dir, line) {
  return command.replace(/(^|[\s='"])(\/[^\s'";&|]*)/g, (_, before, path) => {
    const normal = posix.normalize(path);
    if (normal !== workdir && !normal.startsWith(`${workdir}/`)) {
      fail(line, `RUN reaches ${path}, outside the WORKDIR ${workdir}`);
    }
    return before + dir + normal.slice(workdir.length);
  });
}

/** The patterns of .dockerignore, as a test of a context-relative path (`a/b`). */
function dockerignore() {
  const file = join(CONTEXT, '.dockerignore');
  if (!existsSync(file)) return () => false;
  const patterns = readFileSync(file, 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
  const regexps = patterns.map((pattern) => {
    if (pattern.startsWith('!')) {
      throw new DockerfileError(`.dockerignore: exceptions (${pattern}) are not understood`);
    }
    const clean = posix.normalize(pattern.replace(/^\/+/, '')).replace(/\/+$/, '');
    const body = clean
      .split('/')
      .map((segment) =>
        segment === '**'
          ? '.*'
          : segment
              .replace(/[.+^${}()|\\]/g, '\\$&')
              .replace(/\*/g, '[^/]*')
              .replace(/\?/g, '[^/]'),
      )
      .join('/');
    return new RegExp(`^${body}$`);
  });
  // A path is left out when it or a folder above it matches.
  return (path) => {
    const parts = path.split('/');
    return parts.some((_, i) => regexps.some((r) => r.test(parts.slice(0, i + 1).join('/'))));
  };
}

/** COPY's semantics: a folder's contents into the destination; a file into it or as it. */
function copy(source, dest, { toDir, filter }) {
  const options = { recursive: true, force: true, verbatimSymlinks: true, filter };
  if (statSync(source).isDirectory()) {
    mkdirSync(dest, { recursive: true });
    for (const entry of readdirSync(source)) {
      const from = join(source, entry);
      if (filter(from)) cpSync(from, join(dest, entry), options);
    }
    return;
  }
  const target =
    toDir || (existsSync(dest) && statSync(dest).isDirectory())
      ? join(dest, basename(source))
      : dest;
  mkdirSync(dirname(target), { recursive: true });
  cpSync(source, target, options);
}

/** The environment a RUN line sees: the stage's ENV over what npm needs to reach its registry. */
function runEnv(stageEnv) {
  const passed = Object.entries(process.env).filter(
    ([key]) =>
      [
        'PATH',
        'HOME',
        'LANG',
        'TMPDIR',
        'NODE_EXTRA_CA_CERTS',
        'SSL_CERT_FILE',
        'SSL_CERT_DIR',
      ].includes(key) ||
      /^(https?|no)_proxy$/i.test(key) ||
      /^npm_config_(cache|userconfig|globalconfig|registry)$/.test(key),
  );
  return { ...Object.fromEntries(passed), ...stageEnv };
}

/** No `node_modules` above `dir`: Node would resolve packages the tree lacks from there. */
function assertAlone(dir) {
  for (let up = dirname(dir); ; up = dirname(up)) {
    if (existsSync(join(up, 'node_modules'))) {
      throw new DockerfileError(
        `${join(up, 'node_modules')} is above ${dir}: Node would find packages the tree lacks there; build it elsewhere (under ${tmpdir()})`,
      );
    }
    if (dirname(up) === up) return;
  }
}

function build(outDir, { keepStages }) {
  const { stages, config } = plan(parse(readFileSync(DOCKERFILE, 'utf8')));
  if (existsSync(outDir) && readdirSync(outDir).length > 0) {
    throw new DockerfileError(`${outDir} is not empty`);
  }
  assertAlone(outDir);
  const ignored = dockerignore();
  const fromContext = (path) => {
    const rel = relative(CONTEXT, path).split(sep).join('/');
    return rel === '' || !ignored(rel);
  };
  const started = Date.now();
  const last = stages.at(-1);
  for (const stage of stages) {
    stage.dir =
      stage === last ? outDir : mkdtempSync(join(tmpdir(), `image-tree-stage${stage.index}-`));
    mkdirSync(stage.dir, { recursive: true });
  }
  let built = false;
  try {
    for (const stage of stages) {
      const label = `stage ${stage.index + 1}/${stages.length}${stage.name ? ` (${stage.name})` : ''}`;
      console.log(`image-tree: ${label}: ${stage.workdir} is ${stage.dir}`);
      for (const step of stage.steps) {
        const stepStarted = Date.now();
        const at = (path) => (posix.isAbsolute(path) ? path : posix.join(stage.workdir, path));
        if (step.kind === 'env') {
          stage.env[step.key] = step.value;
        } else if (step.kind === 'copy') {
          const dest = at(step.dest);
          if (dest !== stage.workdir && !dest.startsWith(`${stage.workdir}/`)) {
            fail(step.line, `COPY to ${step.dest}, outside the WORKDIR ${stage.workdir}`);
          }
          const destPath = join(stage.dir, dest.slice(stage.workdir.length));
          for (const source of step.sources) {
            let sourcePath;
            if (step.from) {
              const path = posix.normalize(posix.join('/', source));
              const { workdir, dir } = step.from;
              if (path !== workdir && !path.startsWith(`${workdir}/`)) {
                fail(
                  step.line,
                  `COPY --from of ${source}, outside that stage's WORKDIR ${workdir}`,
                );
              }
              sourcePath = join(dir, path.slice(workdir.length));
            } else {
              sourcePath = resolve(CONTEXT, source);
              if (!fromContext(sourcePath) || relative(CONTEXT, sourcePath).startsWith('..')) {
                fail(
                  step.line,
                  `COPY ${source}: not in the build context (or .dockerignore leaves it out)`,
                );
              }
            }
            if (!existsSync(sourcePath)) fail(step.line, `COPY ${source}: no such file`);
            console.log(`image-tree: line ${step.line}: COPY ${source} → ${dest}`);
            copy(sourcePath, destPath, {
              toDir: step.dest.endsWith('/'),
              filter: step.from ? () => true : fromContext,
            });
          }
        } else {
          console.log(`image-tree: line ${step.line}: RUN ${step.command}`);
          const command = localized(step.command, stage.workdir, stage.dir, step.line);
          const shims = mkdtempSync(join(tmpdir(), 'image-tree-shims-'));
          for (const program of RECORDED_PROGRAMS) {
            writeFileSync(
              join(shims, program),
              `#!/bin/sh\necho "image-tree: recorded, not run: ${program} $*" >&2\n`,
              { mode: 0o755 },
            );
          }
          const env = runEnv(stage.env);
          env.PATH = `${shims}:${env.PATH ?? '/usr/bin:/bin'}`;
          const run = spawnSync('sh', ['-c', command], { cwd: stage.dir, env, stdio: 'inherit' });
          rmSync(shims, { recursive: true, force: true });
          if (run.status !== 0) {
            fail(step.line, `RUN ${step.command} failed (${run.signal ?? `exit ${run.status}`})`);
          }
        }
        if (step.kind !== 'env') {
          console.log(`image-tree: line ${step.line}: done in ${seconds(stepStarted)} s`);
        }
      }
    }
    built = true;
  } finally {
    // A tree half built is not the image's: nothing is left to be taken for it.
    if (!built) rmSync(outDir, { recursive: true, force: true });
    if (!keepStages) {
      for (const stage of stages) {
        if (stage !== last) rmSync(stage.dir, { recursive: true, force: true });
      }
    }
  }
  writeFileSync(`${outDir}.image.json`, `${JSON.stringify(config, null, 2)}\n`);
  console.log(
    `image-tree: the image's tree is ${outDir}, its configuration ${outDir}.image.json (${seconds(started)} s)`,
  );
  for (const note of config.NotReproduced) console.log(`image-tree: not reproduced: ${note}`);
}

const args = process.argv.slice(2);
const positional = args.filter((a) => !a.startsWith('--'));
const unknown = args.filter((a) => a.startsWith('--') && a !== '--keep-stages');
if (positional.length !== 1 || unknown.length > 0) {
  console.error('Usage: node scripts/image-tree.mjs <out-dir> [--keep-stages]');
  process.exit(2);
}
try {
  build(resolve(positional[0]), { keepStages: args.includes('--keep-stages') });
} catch (error) {
  if (!(error instanceof DockerfileError)) throw error;
  console.error(`image-tree: ${error.message}`);
  process.exit(1);
}
