/**
 * A wire object as Maple sends it, typed from the SDK's own type: `T` without the fields Maple
 * leaves out (`Omitted`, checked to be `T`'s: a field the SDK renames fails `tsc` here too), with
 * the fields Maple adds or changes (`Extension`, named explicitly). Type-only: writers
 * `import type` the SDKs, which are dev dependencies and are erased at build.
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export type Sent<T, Omitted extends keyof T = never, Extension = {}> = Omit<T, Omitted | keyof Extension> & Extension;
