import { plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import { variableDocs, type ConfigSection } from './config-section.js';

/** Raised for a bad environment; its message is one line naming the variable. */
export class ConfigurationError extends Error {
  override readonly name = 'ConfigurationError';
}

/** Every section's value, by namespace. */
export type Configuration = Map<string, unknown>;

/**
 * Validates the environment against every module's section at once and builds each value:
 * the first bad variable (in the order the sections come) throws a ConfigurationError of one
 * line naming it, before anything starts. An empty variable counts as unset.
 */
export function loadConfiguration(
  env: Record<string, string | undefined>,
  sections: readonly ConfigSection<unknown, object>[],
): Configuration {
  assertDistinct(sections);
  // The variables that are set, trimmed; an empty variable counts as unset.
  const given = Object.fromEntries(
    Object.entries(env).flatMap(([key, value]) => (value?.trim() ? [[key, value.trim()]] : [])),
  ) as Record<string, string>;
  const values: Configuration = new Map();
  for (const section of sections) {
    const parsed = validateSection(section, given);
    values.set(section.namespace, section.build(parsed));
  }
  return values;
}

/** The validated variables of one section (defaults filled in). */
function validateSection<E extends object>(
  section: ConfigSection<unknown, E>,
  given: Record<string, string>,
): E {
  const parsed = plainToInstance(section.variables, given, { exposeDefaultValues: true });
  const [error] = validateSync(parsed, { whitelist: true });
  if (error) {
    const constraints = error.constraints ?? {};
    // The type is the first thing to be wrong about: "abc" is not an integer before it is too large.
    const key =
      ['isInt', 'isString'].find((name) => name in constraints) ?? Object.keys(constraints)[0];
    const reason = key ? constraints[key] : 'is invalid';
    const secret = variableDocs(section.variables).get(error.property)?.secret;
    const shown = secret ? '' : ` (got ${JSON.stringify(given[error.property])})`;
    throw new ConfigurationError(
      `Invalid configuration: ${error.property} ${stripProperty(reason, error.property)}${shown}`,
    );
  }
  const broken = section.check?.(parsed);
  if (broken) throw new ConfigurationError(`Invalid configuration: ${broken}`);
  return parsed;
}

/** Two modules reading one variable, or one namespace, is a mistake of the code, not the operator. */
function assertDistinct(sections: readonly ConfigSection<unknown, object>[]): void {
  const owners = new Map<string, string>();
  const namespaces = new Set<string>();
  for (const section of sections) {
    if (namespaces.has(section.namespace)) {
      throw new Error(`Two configuration sections are named ${section.namespace}`);
    }
    namespaces.add(section.namespace);
    for (const name of variableDocs(section.variables).keys()) {
      const owner = owners.get(name);
      if (owner) throw new Error(`${name} is declared by both ${owner} and ${section.namespace}`);
      owners.set(name, section.namespace);
    }
  }
}

function stripProperty(message: string, property: string): string {
  return message.startsWith(`${property} `) ? message.slice(property.length + 1) : message;
}
