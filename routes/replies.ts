import type { FastifyReply, FastifyRequest } from 'fastify'
import type { DeletedT } from '../schemas/common.js'

/** A success answer: the envelope around `data`, as the route's response schema (`Envelope(…)`) declares it. */
export interface Ok<T> { success: true, data: T }

interface CreatedOptions {
  /** The resource's name in its URL, when not `data.id` (a repository's slug, a collection's name). */
  id?: string
  /** The request path ends in an action that creates (`POST …/zones/import`): the resource lives in the collection the action belongs to. */
  fromAction?: boolean
}

/** 200: `data` in the envelope. */
export function ok<T> (data: T): Ok<T> {
  return { success: true, data }
}

/**
 * The one Location rule: a created resource's URL is its collection's URL and
 * its id; the collection is the request's path (without its query), or, for
 * an action that creates, that path without the action.
 */
export function locationOf (request: FastifyRequest, id: string, fromAction = false): string {
  const path = request.url.split('?')[0]
  const collection = fromAction ? path.slice(0, path.lastIndexOf('/')) : path
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

/** The one delete answer (`Deleted` in schemas/common.ts): what was deleted. */
export function deleted (id: string): Ok<DeletedT> {
  return ok({ id, deleted: true })
}
