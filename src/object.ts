/** A plain object (a JSON object, a TOML table): not null, not an array. The one check of it. */
export const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);
