import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { CollectionParams, CollectionResponses, CreateCollectionBody, UpdateCollectionBody } from '../../schemas/collection-definitions.js'
import { ProjectIdParams } from '../../schemas/projects.js'
import { createdAt } from '../location.js'

/**
 * The admin side of a project's data API: which collections exist, their
 * fields, indexes and per-method rules. Mounted under `/api/projects/:projectId/collections`.
 */
const collectionDefinitionRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { definitions } = app.collections
  const tags = ['collections']

  app.get('', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('collections.read'),
    schema: { operationId: 'listCollections', tags, summary: 'The project\'s collection definitions, by name', description: 'Needs `collections.read`.', params: ProjectIdParams, response: CollectionResponses.list }
  }, async (request) => ({ success: true as const, data: await definitions.list(request.params.projectId) }))

  app.post('', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('collections.manage'),
    schema: { operationId: 'createCollection', tags, summary: 'Define a collection: fields, indexes and who may call each method', description: 'Needs `collections.manage`. `auth` and names starting with `_` are reserved. Location names the new collection.', params: ProjectIdParams, body: CreateCollectionBody, response: CollectionResponses.created }
  }, async (request, reply) => {
    const collection = await definitions.create(request.params.projectId, request.body)
    return reply.code(201).header('location', createdAt(request, collection.name)).send({ success: true as const, data: collection })
  })

  app.get('/:name', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('collections.read'),
    schema: { operationId: 'getCollection', tags, summary: 'One collection definition', description: 'Needs `collections.read`.', params: CollectionParams, response: CollectionResponses.one }
  }, async (request) => ({ success: true as const, data: await definitions.get(request.params.projectId, request.params.name) }))

  app.put('/:name', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('collections.manage'),
    schema: { operationId: 'updateCollection', tags, summary: 'Change fields, indexes or method settings; refused with 409 if existing records would break it', description: 'Needs `collections.manage`. A change that existing records would violate (a unique index over duplicates, a new required field some lack, a stricter type, a field declared over values records already hold under its name that it would refuse) is 409 `APP_DEFINITION_CONFLICT` and nothing changes. `signUpFields` is for `_users` only.', params: CollectionParams, body: UpdateCollectionBody, response: CollectionResponses.updated }
  }, async (request) => ({ success: true as const, data: await definitions.update(request.params.projectId, request.params.name, request.body) }))

  app.delete('/:name', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('collections.manage'),
    schema: { operationId: 'dropCollection', tags, summary: 'Drop a collection with all its records', description: 'Needs `collections.manage`. Records and files go with it; a collection other collections\' relations point at is 409 `APP_COLLECTION_REFERENCED`.', params: CollectionParams, response: CollectionResponses.dropped }
  }, async (request) => {
    await definitions.drop(request.params.projectId, request.params.name)
    return { success: true as const, data: { id: request.params.name, deleted: true as const } }
  })
}

export default collectionDefinitionRoutes
