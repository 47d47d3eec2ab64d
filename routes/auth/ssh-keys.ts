import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { AddSshKeyBody, AddSshKeyResponses, DeleteSshKeyResponses, KeyParams, ListSshKeysResponses } from '../../schemas/auth.js'
import { platformCaller } from '../../plugins/auth.js'
import { createdAt } from '../location.js'

const sshKeyRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { sshKeys } = app.identity
  // SSH keys are unscoped credentials: only a signed-in session (not a PAT, which may be scoped) adds or removes them.
  app.get('', {
    config: { auth: 'platform' },
    schema: { operationId: 'listSshKeys', tags: ['auth'], summary: 'List your SSH public keys', description: 'The caller\'s SSH public keys with their fingerprints.', response: ListSshKeysResponses }
  }, async (request) => ({ success: true as const, data: await sshKeys.list(platformCaller(request).userId) }))

  app.post('', {
    config: { auth: 'session' },
    schema: { operationId: 'addSshKey', tags: ['auth'], summary: 'Add an SSH public key for git over SSH', description: 'Needs a signed-in session. ed25519, ECDSA or RSA of at least 2048 bits; a key registered anywhere already is 409 `APP_SSH_KEY_EXISTS`.', body: AddSshKeyBody, response: AddSshKeyResponses }
  }, async (request, reply) => {
    const key = await sshKeys.add(platformCaller(request).userId, request.body)
    return reply.code(201).header('location', createdAt(request, key.id)).send({ success: true as const, data: key })
  })

  app.delete('/:keyId', {
    config: { auth: 'session' },
    schema: { operationId: 'deleteSshKey', tags: ['auth'], summary: 'Delete an SSH public key', description: 'Needs a signed-in session.', params: KeyParams, response: DeleteSshKeyResponses }
  }, async (request) => {
    await sshKeys.remove(platformCaller(request).userId, request.params.keyId)
    return { success: true as const, data: { deleted: true as const } }
  })
}

export default sshKeyRoutes
