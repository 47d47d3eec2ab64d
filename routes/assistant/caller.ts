import type { FastifyRequest } from 'fastify'
import type { AssistantCaller } from '../../services/assistant/index.js'

/** The platform user calling, with a scoped PAT's scopes: who a run's tools act as, or who decides an approval. */
export function assistantCaller (request: FastifyRequest): AssistantCaller {
  const { user } = request.caller
  const origin = { credential: user.via === 'pat' ? 'pat' as const : 'session' as const, address: request.ip }
  return { userId: user.userId, ...(user.scopes === undefined ? {} : { scopes: user.scopes }), origin }
}
