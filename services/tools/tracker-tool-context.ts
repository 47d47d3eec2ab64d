import { trackerActor, type TrackerActor, type TrackerScope } from '../tracker/access.js'
import type { TrackerServices } from '../tracker/index.js'
import type { ToolAccess, ToolCaller } from './registry.js'

/** What every tracker tool is handed (tracker-tools.ts and tracker-workspace-tools.ts): the services, the caller as the tracker sees them, and their project. */
export interface TrackerToolContext {
  tracker: TrackerServices
  actor: TrackerActor
  projectId: string
  /** The tracker project `lpId` as this caller may use it now (their role read afresh); its 404 when they may not. */
  scope: (lpId: string) => Promise<TrackerScope>
}

export function trackerToolContext (tracker: TrackerServices) {
  return (caller: ToolCaller, access: ToolAccess): TrackerToolContext => {
    const actor = trackerActor(caller.userId, access.permissions)
    return { tracker, actor, projectId: caller.projectId, scope: async (lpId) => await tracker.projects.scope(actor, caller.projectId, lpId) }
  }
}
