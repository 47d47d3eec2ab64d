import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import {
  AccessCheckBody, CollectionParams, CollectionResponses, CreateCollectionBody, UpdateCollectionBody
} from '../../schemas/collection-definitions.js'
import { ProjectIdParams } from '../../schemas/projects.js'
import { collectionErrors } from '../../services/collections/errors.js'
import { commonErrors } from '../../services/platform/errors.js'
import { created, deleted, ok } from '../replies.js'

/** What a definition may break, whether new or changed. */
const DEFINITION_WRITES = [collectionErrors.invalidDefinition, collectionErrors.reservedCollection]

/**
 * The admin side of a project's data API: which collections exist, their
 * fields, indexes and per-method rules. Mounted under `/api/projects/:projectId/collections`;
 * every route acts in the project as a platform user.
 */
const collectionDefinitionRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { definitions } = app.collections
  const tags = ['collections']
  app.routeDefaults({ auth: 'platform', parent: 'project' })

  app.get('', {
    config: { permission: 'collections.read' },
    schema: {
      operationId: 'listCollections',
      tags,
      summary: 'The project\'s collection definitions, by name',
      params: ProjectIdParams,
      response: CollectionResponses.list
    }
  }, async (request) => ok(await definitions.list(request.scope.project.id)))

  app.post('', {
    config: { permission: 'collections.manage', errors: [...DEFINITION_WRITES, collectionErrors.collectionExists] },
    schema: {
      operationId: 'createCollection',
      tags,
      summary: 'Define a collection: fields, indexes and who may call each method',
      description: '`auth` and names starting with `_` are reserved. Location names the new collection.',
      params: ProjectIdParams,
      body: CreateCollectionBody,
      response: CollectionResponses.created
    }
  }, async (request, reply) => {
    const collection = await definitions.create(request.scope.project.id, request.body)
    return created(reply, collection, { id: collection.name })
  })

  app.get('/:name', {
    config: { permission: 'collections.read', errors: [collectionErrors.collectionNotFound] },
    schema: {
      operationId: 'getCollection',
      tags,
      summary: 'One collection definition',
      params: CollectionParams,
      response: CollectionResponses.one
    }
  }, async (request) => ok(await definitions.get(request.scope.project.id, request.params.name)))

  app.put('/:name', {
    config: {
      permission: 'collections.manage',
      errors: [...DEFINITION_WRITES, collectionErrors.collectionNotFound, collectionErrors.definitionConflict]
    },
    schema: {
      operationId: 'updateCollection',
      tags,
      summary: 'Change fields, indexes or method settings; refused with 409 if existing records would break it',
      description: 'A change that existing records would violate (a unique index over duplicates, a new required field some lack, ' +
        'a stricter type, a field declared over values records already hold under its name that it would refuse) is refused ' +
        'and nothing changes. `signUpFields` is for `_users` only.',
      params: CollectionParams,
      body: UpdateCollectionBody,
      response: CollectionResponses.updated
    }
  }, async (request) => ok(await definitions.update(request.scope.project.id, request.params.name, request.body)))

  app.post('/:name/access-check', {
    config: {
      permission: 'records.read',
      errors: [collectionErrors.collectionNotFound, collectionErrors.recordNotFound, ...DEFINITION_WRITES, commonErrors.userNotFound]
    },
    schema: {
      operationId: 'checkCollectionAccess',
      tags,
      summary: 'Who can see this? A method\'s rule tried as an end user or an anonymous caller',
      description: 'Decided by the data API\'s own rule code, with the rule\'s variables filled in for that caller, under the stored ' +
        'settings or draft `methods` (validated as a save would, never saved). Answers whether the method is allowed (else the error ' +
        'the data API would give), the effective filter, check and field masks, whether the rule reaches `recordId`, and for list and ' +
        'get how many records the caller can see (counted up to 1,000). Nothing is written. Needs `records.read`: the answer tells ' +
        'which records exist.',
      params: CollectionParams,
      body: AccessCheckBody,
      response: CollectionResponses.accessCheck
    }
  }, async (request) => {
    const { project } = request.scope
    return ok(await app.accessCheck.check(project.id, request.params.name, request.body))
  })

  app.delete('/:name', {
    config: {
      permission: 'collections.manage',
      errors: [collectionErrors.collectionNotFound, collectionErrors.reservedCollection, collectionErrors.collectionReferenced]
    },
    schema: {
      operationId: 'dropCollection',
      tags,
      summary: 'Drop a collection with all its records',
      description: 'Records and files go with it; a collection other collections\' relations point at is refused.',
      params: CollectionParams,
      response: CollectionResponses.dropped
    }
  }, async (request) => {
    await definitions.drop(request.scope.project.id, request.params.name)
    return deleted(request.params.name)
  })
}

export default collectionDefinitionRoutes
