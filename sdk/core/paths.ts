import type { paths } from '../generated/plinth.js'

/** Paths that have method M. */
export type PathWith<M extends string> = { [P in keyof paths]: paths[P] extends Record<M, infer O> ? (O extends undefined | never ? never : P) : never }[keyof paths]

type Operation<P extends keyof paths, M extends string> = paths[P] extends Record<M, infer O> ? NonNullable<O> : never

/** The JSON body an operation takes, as the contract declares it. */
export type BodyOf<P extends keyof paths, M extends string> = Operation<P, M> extends { requestBody?: { content: { 'application/json': infer B } } } ? B : never

/** The query parameters an operation takes. */
export type QueryOf<P extends keyof paths, M extends string> = Operation<P, M> extends { parameters: { query?: infer Q } } ? NonNullable<Q> : never

type Success<R, S extends number> = R extends Record<S, { content: { 'application/json': { data: infer D } } }> ? D : never

/** The `data` of an operation's success answer (200, 201 or 202). */
export type DataOf<P extends keyof paths, M extends string> = Operation<P, M> extends { responses: infer R }
  ? Success<R, 200> | Success<R, 201> | Success<R, 202>
  : never
