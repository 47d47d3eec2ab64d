import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import {
  CreateVariableBody, UpdateVariableBody, VariableIfMatchHeaders, VariableListParams, VariableListQuery, VariableParams, VariableResponses
} from '../../schemas/auxiliary-variables.js'
import { auxiliaryErrors as e } from '../../services/auxiliary/errors.js'
import { commonErrors } from '../../services/platform/errors.js'
import { created, deleted, ok } from '../replies.js'
import { ifMatch, tagged } from '../conditional.js'

const tags = ['auxiliary']
const KEY = [e.variableKeyInvalid, e.variableKeyReserved, e.variableExists, e.variableValueTooLong]
const CONDITIONAL = [e.variableNotFound, commonErrors.invalidIfMatch, e.versionMismatch]

/**
 * `/auxiliary/variables`: the project's variables, given to its hosted apps
 * as environment variables at their next deploy (docs/auxiliary.md#variables).
 * A secret one is write-only: every answer carries `value: null` for it.
 */
const variableRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { variables } = app.auxiliary

  app.get('/', {
    config: { permission: 'auxiliary.read' },
    schema: {
      operationId: 'listAuxiliaryVariables',
      tags,
      summary: 'The project\'s variables, by key',
      description: 'A secret variable is listed with `value: null`.',
      params: VariableListParams,
      querystring: VariableListQuery,
      response: VariableResponses.list
    }
  }, async (request) => ok(await variables.list(request.scope.project.id, request.query)))

  app.post('/', {
    config: { permission: 'auxiliary.manage', errors: [...KEY, e.variablesLimit] },
    schema: {
      operationId: 'createAuxiliaryVariable',
      tags,
      summary: 'Add a variable to the project',
      description: 'The project\'s hosted apps get it as an environment variable at their next deploy; an app\'s own secret of the same ' +
        'name overrides it. `secret: true` seals the value at rest; it is never shown again.',
      params: VariableListParams,
      body: CreateVariableBody,
      response: VariableResponses.created
    }
  }, async (request, reply) => {
    void reply.header('etag', '"1"')
    return created(reply, await variables.create(request.scope.project.id, request.body))
  })

  app.get('/:variableId', {
    config: { permission: 'auxiliary.read', errors: [e.variableNotFound] },
    schema: {
      operationId: 'getAuxiliaryVariable',
      tags,
      summary: 'One variable; a secret one with `value: null`',
      params: VariableParams,
      response: VariableResponses.variable
    }
  }, async (request, reply) => tagged(reply, ok(await variables.get(request.scope.project.id, request.params.variableId))))

  app.patch('/:variableId', {
    config: { permission: 'auxiliary.manage', errors: [...CONDITIONAL, ...KEY, e.variableValueRequired] },
    schema: {
      operationId: 'updateAuxiliaryVariable',
      tags,
      summary: 'Change a variable\'s key, value or secrecy; with If-Match only at that version (412 otherwise)',
      description: 'Running deployments keep the values they took; the apps\' timelines say the variables changed, and the next deploy ' +
        'takes the new ones. `secret: false` on a secret variable needs a new `value`.',
      params: VariableParams,
      headers: VariableIfMatchHeaders,
      body: UpdateVariableBody,
      response: VariableResponses.variable
    }
  }, async (request, reply) => {
    const variable = await variables.update(request.scope.project.id, request.params.variableId, request.body, ifMatch(request))
    return tagged(reply, ok(variable))
  })

  app.delete('/:variableId', {
    config: { permission: 'auxiliary.manage', errors: CONDITIONAL },
    schema: {
      operationId: 'deleteAuxiliaryVariable',
      tags,
      summary: 'Remove a variable; with If-Match only at that version (412 otherwise)',
      description: 'Running deployments keep it until the next deploy.',
      params: VariableParams,
      headers: VariableIfMatchHeaders,
      response: VariableResponses.deleted
    }
  }, async (request) => {
    await variables.delete(request.scope.project.id, request.params.variableId, ifMatch(request))
    return deleted(request.params.variableId)
  })
}

export default variableRoutes
