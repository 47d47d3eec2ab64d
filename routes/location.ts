import type { FastifyRequest } from 'fastify'

/** The Location of a resource created under the request's own path: that path and the new resource's id. */
export function createdAt (request: FastifyRequest, id: string): string {
  return `${request.url.split('?')[0]}/${encodeURIComponent(id)}`
}
