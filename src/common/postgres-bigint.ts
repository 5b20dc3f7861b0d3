/**
 * The largest Postgres bigint. Stored ids (the events') are bigints: a larger number read from
 * a request is no id, and Postgres would refuse it in a statement (a 500), so it is checked
 * against this first.
 */
export const MAX_POSTGRES_BIGINT = 9_223_372_036_854_775_807n;
