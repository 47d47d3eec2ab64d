import type { FastifyReply, FastifyRequest } from 'fastify'
import type { DeletedT } from '../schemas/common.js'

/** A success answer: the envelope around `data`, as the route's response schema (`Envelope(…)`) declares it. */
export interface Ok<T> { success: true, data: T }

interface CreatedOptions {
  /** The resource's name in its URL, when not `data.id` (a repository's slug, a collection's name). */
  id?: string
  /**
   * The request path ends in an action that creates: on the collection (`POST …/zones/import`: `true`), or on one of
   * its members, making another (`POST …/deployments/:id/rollback`: `'onMember'`); the resource lives in that collection.
   */
  fromAction?: boolean | 'onMember'
}

/** 200: `data` in the envelope. */
export function ok<T> (data: T): Ok<T> {
  return { success: true, data }
}

/**
 * The one Location rule: a created resource's URL is its collection's URL and
 * its id; the collection is the request's path (without its query), or, for
 * an action that creates, that path without the action (and the member it
 * acts on).
 */
export function locationOf (request: FastifyRequest, id: string, fromAction: boolean | 'onMember' = false): string {
  let collection = request.url.split('?')[0]
  for (let segments = fromAction === 'onMember' ? 2 : fromAction ? 1 : 0; segments > 0; segments--) collection = collection.slice(0, collection.lastIndexOf('/'))
  return `${collection}/${encodeURIComponent(id)}`
}

/** 201 with Location (see locationOf): `data` in the envelope; the route's response is `Created(…)`. */
export function created<T extends { id: string }> (reply: FastifyReply, data: T, options?: CreatedOptions): Ok<T>
export function created<T> (reply: FastifyReply, data: T, options: CreatedOptions & { id: string }): Ok<T>
export function created<T> (reply: FastifyReply, data: T, options: CreatedOptions = {}): Ok<T> {
  const id = options.id ?? (data as { id: string }).id
  void reply.code(201).header('location', locationOf(reply.request, id, options.fromAction))
  return ok(data)
}

/** 202 with Location (see locationOf): the work is queued, and `data`, in the envelope, is what will do it; the route's response is `Created(…)`. */
export function accepted<T extends { id: string }> (reply: FastifyReply, data: T, options: CreatedOptions = {}): Ok<T> {
  void reply.code(202).header('location', locationOf(reply.request, options.id ?? data.id, options.fromAction))
  return ok(data)
}

/** The one delete answer (`Deleted` in schemas/common.ts): what was deleted. */
export function deleted (id: string): Ok<DeletedT> {
  return ok({ id, deleted: true })
}
