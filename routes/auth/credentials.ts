import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { Static, TSchema } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import { AddSshKeyBody, AuthResponses, CreateApiKeyBody, KeyParams } from '../../schemas/auth.js'
import type { DeclaredError } from '../../services/platform/errors.js'
import { commonErrors } from '../../services/platform/errors.js'
import { identityErrors } from '../../services/identity/errors.js'
import { orgErrors } from '../../services/orgs/errors.js'
import { created, deleted, ok } from '../replies.js'

/** What the three routes of one kind of credential call. */
interface UserCredentials<Input, View extends { id: string }> {
  list: (userId: string) => Promise<View[]>
  create: (userId: string, input: Input) => Promise<View>
  delete: (userId: string, id: string) => Promise<void>
}

interface Words { operationId: string, summary: string, description: string }

/** One kind of a user's own credential: its service, its routes' words, and what its writes may meet. */
interface CredentialKind<Body extends TSchema, View extends { id: string }> {
  credentials: (app: FastifyInstance) => UserCredentials<Static<Body>, View>
  body: Body
  responses: { list: { 200: TSchema }, created: { 201: TSchema } }
  list: Words
  create: Words & { errors: readonly DeclaredError[] }
  delete: Words & { errors: readonly DeclaredError[] }
}

/**
 * A platform user's own credentials — personal access tokens and SSH keys —
 * have the same three routes: a user signed in either way lists theirs;
 * adding and removing one needs a signed-in session (auth `session`), since
 * a PAT, which may be scoped, must never mint or drop an unscoped credential.
 */
function credentialRoutes<Body extends TSchema, View extends { id: string }> (kind: CredentialKind<Body, View>): FastifyPluginAsyncTypebox {
  return async (app) => {
    const credentials = kind.credentials(app)
    const tags = ['auth']

    app.get('', {
      config: { auth: 'platform' },
      schema: { ...kind.list, tags, response: kind.responses.list }
    }, async (request) => ok(await credentials.list(request.caller.user.userId)))

    app.post('', {
      config: { auth: 'session', errors: [identityErrors.patNotAllowed, ...kind.create.errors] },
      schema: { ...kind.create, tags, body: kind.body, response: kind.responses.created }
    }, async (request, reply) => created(reply, await credentials.create(request.caller.user.userId, request.body as Static<Body>)))

    app.delete('/:keyId', {
      config: { auth: 'session', errors: [identityErrors.patNotAllowed, ...kind.delete.errors] },
      schema: { ...kind.delete, tags, params: KeyParams, response: AuthResponses.deleted }
    }, async (request) => {
      await credentials.delete(request.caller.user.userId, request.params.keyId)
      return deleted(request.params.keyId)
    })
  }
}

/** `/api/auth/api-keys`: personal access tokens, each shown once and stored as a hash. */
export const apiKeyRoutes = credentialRoutes({
  credentials: (app) => {
    const { apiKeys } = app.identity
    return {
      list: async (userId) => await apiKeys.list(userId),
      create: async (userId, input) => await apiKeys.create(userId, input),
      delete: async (userId, id) => { await apiKeys.revoke(userId, id) }
    }
  },
  body: CreateApiKeyBody,
  responses: { list: AuthResponses.apiKeyList, created: AuthResponses.apiKeyCreated },
  list: {
    operationId: 'listApiKeys',
    summary: 'List your personal access tokens (never the tokens themselves)',
    description: 'Each token\'s name, hint, scopes and dates; the values are never stored.'
  },
  create: {
    operationId: 'createApiKey',
    summary: 'Create a personal access token; the token is shown once',
    description: '`scopes` narrow what the token may do to permissions from the catalogue; without them it acts with all of its user\'s.',
    errors: [commonErrors.invalidName, identityErrors.invalidExpiry, orgErrors.unknownPermission, identityErrors.tooManyApiKeys]
  },
  delete: {
    operationId: 'revokeApiKey',
    summary: 'Revoke a personal access token at once',
    description: 'The token is refused from the next request on.',
    errors: [identityErrors.apiKeyNotFound]
  }
})

/** `/api/auth/ssh-keys`: public keys for git over SSH. */
export const sshKeyRoutes = credentialRoutes({
  credentials: (app) => {
    const { sshKeys } = app.identity
    return {
      list: async (userId) => await sshKeys.list(userId),
      create: async (userId, input) => await sshKeys.add(userId, input),
      delete: async (userId, id) => { await sshKeys.remove(userId, id) }
    }
  },
  body: AddSshKeyBody,
  responses: { list: AuthResponses.sshKeyList, created: AuthResponses.sshKeyCreated },
  list: {
    operationId: 'listSshKeys',
    summary: 'List your SSH public keys',
    description: 'The caller\'s SSH public keys with their fingerprints.'
  },
  create: {
    operationId: 'addSshKey',
    summary: 'Add an SSH public key for git over SSH',
    description: 'ed25519, ECDSA or RSA of at least 2048 bits; a key is registered once across all users and deploy keys.',
    errors: [identityErrors.invalidSshKey, identityErrors.sshKeyExists]
  },
  delete: {
    operationId: 'deleteSshKey',
    summary: 'Delete an SSH public key',
    description: 'Git over SSH refuses it from the next connection on.',
    errors: [identityErrors.sshKeyNotFound]
  }
})
