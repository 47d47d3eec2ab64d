import type { FastifyRequest } from 'fastify'
import type { RecentKindT } from '../../schemas/tracker-workspace.js'
import type { TrackerScope } from '../../services/tracker/access.js'

/**
 * What a GET of one work item, page, view, cycle or module calls with what it
 * read: the caller's recents note it (one upsert), and the read is answered
 * even if noting it failed.
 */
export async function opened<T extends { id: string }> (
  request: FastifyRequest, scope: TrackerScope, kind: RecentKindT, view: T
): Promise<T> {
  try {
    await request.server.tracker.personal.opened(scope, kind, view.id)
  } catch (error) {
    request.log.warn({ err: error, kind }, 'could not note a tracker recent')
  }
  return view
}
