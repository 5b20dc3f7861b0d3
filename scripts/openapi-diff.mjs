// npm run openapi:diff (CI): openapi/openapi.json against the newest released document in
// openapi/released/ (X.Y.Z.json). A change that breaks clients needs a new major version, a
// changed document needs a new version, and every version needs a CHANGELOG.md section.
//
// Breaking is what openapi-diff says (paths, methods, status codes, request and response
// bodies) plus rules of our own for what it does not read but generated clients are built
// from: operationIds (function names), first tags (class or module names), parameters (its
// docs/OPENAPI3.md: not read), component schemas (type names), document tags, security schemes.
// openapi-diff's "unclassified" changes are printed, not counted: it uses that class only for
// the document's own x- extensions, which no generator reads.
//
// Exit code: 0 fine, 1 the policy fails, 2 the comparison could not be made.
import { readdirSync, readFileSync } from 'node:fs';
import { relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { isDeepStrictEqual, parseArgs } from 'node:util';
import openapiDiff from 'openapi-diff';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

/** [major, minor, patch] of an `X.Y.Z` version, or undefined. */
export function parseVersion(text) {
  const match = /^(\d+)\.(\d+)\.(\d+)$/.exec(String(text));
  return match ? match.slice(1).map(Number) : undefined;
}

/** Negative, 0 or positive as a is older than, the same as or newer than b (both X.Y.Z). */
export function compareVersions(a, b) {
  const [x, y] = [parseVersion(a), parseVersion(b)];
  return x[0] - y[0] || x[1] - y[1] || x[2] - y[2];
}

/** The newest `X.Y.Z` among file names `X.Y.Z.json`, by semver (0.10.0 is newer than 0.9.0). */
export function newestVersion(fileNames) {
  return fileNames
    .map((name) => /^(\d+\.\d+\.\d+)\.json$/.exec(name)?.[1])
    .filter(Boolean)
    .sort(compareVersions)
    .at(-1);
}

/** An object, its local `$ref` (`#/components/...`) followed. */
function deref(document, object) {
  if (typeof object?.$ref !== 'string' || !object.$ref.startsWith('#/')) return object;
  return object.$ref
    .slice(2)
    .split('/')
    .map((part) => part.replaceAll('~1', '/').replaceAll('~0', '~'))
    .reduce((node, part) => node?.[part], document);
}

/** Each operation by `METHOD /path`: operationId, tags, and parameters by `name (in)`. */
function operations(document) {
  const found = new Map();
  for (const [path, item] of Object.entries(document.paths ?? {})) {
    for (const method of METHODS.filter((m) => item[m])) {
      const operation = item[method];
      const parameters = new Map();
      // Path-level parameters apply too; the operation's own replace them (same name and in).
      for (const parameter of [...(item.parameters ?? []), ...(operation.parameters ?? [])]) {
        const { name, in: location, required } = deref(document, parameter) ?? {};
        parameters.set(`${name} (${location})`, { name, in: location, required: !!required });
      }
      found.set(`${method.toUpperCase()} ${path}`, {
        operationId: operation.operationId,
        tags: operation.tags ?? [],
        parameters,
      });
    }
  }
  return found;
}

const list = (values) => `[${values.join(', ')}]`;
const missing = (before = {}, after = {}) => Object.keys(before).filter((key) => !(key in after));

/**
 * The breaking changes from `released` to `current` that openapi-diff does not report, one
 * line each naming what changed. A generated client's function, class and type names come
 * from these, so a rename breaks its callers even when the HTTP exchange is the same.
 */
export function compareDocuments(released, current) {
  const changes = [];
  const before = operations(released);
  const after = operations(current);

  for (const [key, old] of before) {
    const now = after.get(key);
    // A removed operation is openapi-diff's (path.remove, method.remove).
    if (!now) continue;
    if (old.operationId !== undefined && now.operationId !== old.operationId) {
      changes.push(
        now.operationId === undefined
          ? `${key}: operationId ${old.operationId} removed`
          : `${key}: operationId ${old.operationId} renamed to ${now.operationId}`,
      );
    }
    // Tags added at the end are additive; any other change moves or drops generated code.
    const kept = old.tags.every((tag, i) => now.tags[i] === tag);
    if (!kept) {
      const removed = old.tags.filter((tag) => !now.tags.includes(tag));
      const why = removed.length
        ? `removed ${removed.join(', ')}`
        : now.tags[0] !== old.tags[0]
          ? `first tag ${old.tags[0]} is now ${now.tags[0]}`
          : 'not only added at the end';
      changes.push(`${key}: tags ${list(old.tags)} became ${list(now.tags)} (${why})`);
    }
    for (const [id, parameter] of old.parameters) {
      const same = now.parameters.get(id);
      const moved = [...now.parameters.values()].find((p) => p.name === parameter.name);
      if (same) {
        if (same.required && !parameter.required) {
          changes.push(`${key}: parameter ${id} became required`);
        }
      } else if (moved) {
        changes.push(
          `${key}: parameter ${parameter.name} moved from ${parameter.in} to ${moved.in}`,
        );
      } else {
        changes.push(`${key}: parameter ${id} removed or renamed`);
      }
    }
    for (const [id, parameter] of now.parameters) {
      const sameName = [...old.parameters.values()].some((p) => p.name === parameter.name);
      if (parameter.required && !old.parameters.has(id) && !sameName) {
        changes.push(`${key}: required parameter ${id} added`);
      }
    }
  }

  // An operationId at another method or path: the same function now sends another request.
  const keyOf = (map) =>
    new Map([...map].filter(([, op]) => op.operationId).map(([key, op]) => [op.operationId, key]));
  const [oldKeys, newKeys] = [keyOf(before), keyOf(after)];
  for (const [operationId, key] of oldKeys) {
    const now = newKeys.get(operationId);
    if (now && now !== key) changes.push(`operationId ${operationId} moved from ${key} to ${now}`);
  }

  for (const name of missing(released.components?.schemas, current.components?.schemas)) {
    changes.push(`schema ${name} removed or renamed`);
  }
  const tagNames = (document) => Object.fromEntries((document.tags ?? []).map((t) => [t.name, t]));
  for (const name of missing(tagNames(released), tagNames(current))) {
    changes.push(`tag ${name} removed from the document's tags`);
  }
  const schemes = (document) => document.components?.securitySchemes;
  for (const name of missing(schemes(released), schemes(current))) {
    changes.push(`security scheme ${name} removed`);
  }
  return changes;
}

/** Whether CHANGELOG.md's text has a section `## X.Y.Z` (or `## X.Y.Z — date`) for version. */
export function hasChangelogSection(changelog, version) {
  const escaped = version.replaceAll('.', '\\.');
  return new RegExp(`^##\\s+${escaped}(\\s|$)`, 'm').test(changelog);
}

/**
 * The policy's failures (none: it passes). current and released are info.version values,
 * identical whether the documents are JSON-deep-equal, breaking the breaking changes found,
 * changelog CHANGELOG.md's text (undefined: there is none).
 */
export function checkRelease({ current, released, identical, breaking, changelog }) {
  if (!parseVersion(current)) return [`info.version ${current} is not a version X.Y.Z`];
  const failures = [];
  const order = compareVersions(current, released);
  if (order < 0) {
    failures.push(`info.version ${current} is older than the newest release ${released}`);
  } else if (order === 0 && !identical) {
    failures.push(
      `the document changed: bump info.version (package.json version) and add a CHANGELOG entry`,
    );
  } else if (
    order > 0 &&
    breaking.length &&
    parseVersion(current)[0] === parseVersion(released)[0]
  ) {
    failures.push(
      `a breaking change needs a major version (${current} has the major version of ${released}) and a CHANGELOG entry`,
    );
  }
  if (changelog === undefined) {
    failures.push(`CHANGELOG.md does not exist: add it with a section ## ${current}`);
  } else if (!hasChangelogSection(changelog, current)) {
    failures.push(`CHANGELOG.md has no section ## ${current}`);
  }
  return failures;
}

/** One line for an openapi-diff result: its code and where, `paths./p.get.x` read as `GET /p x`. */
function describe(difference) {
  const where = [...difference.sourceSpecEntityDetails, ...difference.destinationSpecEntityDetails]
    .map((detail) => detail.location)
    .at(0);
  const operation = new RegExp(`^paths\\.(/.*?)\\.(${METHODS.join('|')})(?:\\.(.*))?$`).exec(where);
  const place = operation
    ? [operation[2].toUpperCase(), operation[1], operation[3]].filter(Boolean).join(' ')
    : where?.replace(/^paths\./, '');
  return `${difference.code}: ${place}`;
}

const count = (n, what) => `${n} ${what}${n === 1 ? '' : 's'}`;

async function main() {
  const { values } = parseArgs({
    options: {
      current: { type: 'string', default: resolve(ROOT, 'openapi/openapi.json') },
      'released-dir': { type: 'string', default: resolve(ROOT, 'openapi/released') },
      changelog: { type: 'string', default: resolve(ROOT, 'CHANGELOG.md') },
    },
  });
  // Paths in the output as given from the working directory, absolute outside it.
  const shown = (file) => {
    const path = relative(process.cwd(), file);
    return path && !path.startsWith('..') ? path : file;
  };
  const releasedVersion = newestVersion(readdirSync(values['released-dir']));
  if (!releasedVersion) {
    console.error(`no released document X.Y.Z.json in ${shown(values['released-dir'])}`);
    return 2;
  }
  const releasedFile = resolve(values['released-dir'], `${releasedVersion}.json`);
  const [releasedText, currentText] = [releasedFile, values.current].map((file) =>
    readFileSync(file, 'utf8'),
  );
  const released = JSON.parse(releasedText);
  const current = JSON.parse(currentText);
  let changelog;
  try {
    changelog = readFileSync(values.changelog, 'utf8');
  } catch (error) {
    if (error.code !== 'ENOENT') throw error;
  }

  const identical = isDeepStrictEqual(released, current);
  const outcome = identical
    ? { nonBreakingDifferences: [], unclassifiedDifferences: [] }
    : await openapiDiff.diffSpecs({
        sourceSpec: { content: releasedText, location: releasedFile, format: 'openapi3' },
        destinationSpec: { content: currentText, location: values.current, format: 'openapi3' },
      });
  const breaking = [
    ...(outcome.breakingDifferences ?? []).map(describe),
    ...compareDocuments(released, current),
  ];
  const nonBreaking = outcome.nonBreakingDifferences.map(describe);
  const unclassified = outcome.unclassifiedDifferences.map(describe);

  const version = current.info?.version;
  console.log(
    `${shown(values.current)} (${version}) against ${shown(releasedFile)} (${releasedVersion})`,
  );
  for (const [title, lines, note] of [
    ['breaking change', breaking, ''],
    ['non-breaking change', nonBreaking, ''],
    ['unclassified change', unclassified, ' (not counted as breaking)'],
  ]) {
    if (!lines.length) continue;
    console.log(`${count(lines.length, title)}${note}:`);
    for (const line of lines) console.log(`  - ${line}`);
  }

  const failures = checkRelease({
    current: version,
    released: releasedVersion,
    identical,
    breaking,
    changelog,
  });
  for (const failure of failures) console.error(`FAIL: ${failure}`);
  if (failures.length) return 1;
  console.log(
    `OK: ${version} against ${releasedVersion}: ${identical ? 'identical' : `${count(breaking.length, 'breaking change')}, ${nonBreaking.length} non-breaking, ${unclassified.length} unclassified`}`,
  );
  return 0;
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  try {
    process.exitCode = await main();
  } catch (error) {
    // An unreadable file or a document openapi-diff refuses (a $ref to nothing): no verdict.
    console.error(`cannot compare: ${error.message}`);
    process.exitCode = 2;
  }
}
