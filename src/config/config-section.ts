import { Inject, type Type } from '@nestjs/common';
import 'reflect-metadata';

/** How a variable is documented in `.env.example` and the table in docs/configuration.md. */
export interface VariableDoc {
  /** What it does, in one line of markdown. */
  doc: string;
  /** The default as the docs show it; unset: the property's initial value, or "unset". */
  default?: string;
  /** Never echoed in an error message (a token, a password, a URL with credentials). */
  secret?: boolean;
}

const VARIABLES = Symbol('config:variables');

/**
 * Documents an environment variable of a configuration class (beside its class-validator
 * rules): the docs are generated from it, and a secret is never echoed.
 */
export function Variable(doc: string, options: Omit<VariableDoc, 'doc'> = {}): PropertyDecorator {
  return (target, property) => {
    const docs = variableDocs(target.constructor);
    docs.set(String(property), { doc, ...options });
    Reflect.defineMetadata(VARIABLES, docs, target.constructor);
  };
}

/** The documented variables of a configuration class, in declaration order. */
export function variableDocs(variables: object): Map<string, VariableDoc> {
  const own = Reflect.getOwnMetadata(VARIABLES, variables) as Map<string, VariableDoc> | undefined;
  return new Map(own ?? []);
}

/**
 * A module's configuration: its environment variables (a class-validator class whose
 * properties are the variables, each documented with `@Variable`), validated at boot with
 * every other module's, and the typed value the module reads. Inject the value with
 * `@InjectConfig(section)`.
 */
export interface ConfigSection<T = unknown, E extends object = object> {
  readonly namespace: string;
  /** What the variables are about, for the generated docs (one sentence). */
  readonly description: string;
  readonly variables: Type<E>;
  /** The injection token of the built value. */
  readonly KEY: string;
  build(env: E): T;
  /** A rule across variables: the message (without "Invalid configuration: ") when broken. */
  check?(env: E): string | undefined;
}

/** The value type of a section. */
export type ConfigOf<S> = S extends ConfigSection<infer T> ? T : never;

export function defineConfig<E extends object, T>(
  section: Omit<ConfigSection<T, E>, 'KEY'>,
): ConfigSection<T, E> {
  return { ...section, KEY: `CONFIG:${section.namespace}` };
}

/** Injects a section's value. */
export const InjectConfig = (section: ConfigSection<unknown, object>): ParameterDecorator =>
  Inject(section.KEY);
