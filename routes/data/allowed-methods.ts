import type { FastifyInstance } from 'fastify'
import type { CollectionMethod } from '../../schemas/collections.js'
import { collectionErrors } from '../../services/collections/errors.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The collection method a data route calls, which the collection may have disabled. */
    collectionMethod?: CollectionMethod
  }
}

/**
 * A disabled collection method answers 405, and a 405 names in Allow what the
 * path does take: the HTTP methods of its routes whose collection methods
 * this collection has enabled.
 */
export function allowEnabledMethods (app: FastifyInstance): void {
  const routesByUrl = new Map<string, Array<[string, CollectionMethod]>>()
  app.addHook('onRoute', (route) => {
    const method = route.config?.collectionMethod
    if (method === undefined) return
    const routes = routesByUrl.get(route.url) ?? []
    for (const verb of [route.method].flat()) routes.push([verb, method])
    routesByUrl.set(route.url, routes)
  })
  app.addHook('onError', async (request, reply, error) => {
    if (!collectionErrors.methodDisabled.is(error)) return
    const { projectId, table } = request.params as { projectId: string, table: string }
    const definition = await app.collections.definitions.find(projectId, table)
    if (definition === null) return
    const allowed = (routesByUrl.get(request.routeOptions.url ?? '') ?? []).filter(([, method]) => definition.methods[method].enabled)
    void reply.header('allow', allowed.map(([verb]) => verb).join(', '))
  })
}
