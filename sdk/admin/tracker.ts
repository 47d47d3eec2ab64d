import { unwrap, type Http } from '../core/http.js'
import type { BodyOf, QueryOf } from '../core/paths.js'
import type { components } from '../generated/plinth.js'

export type TrackerWorkItem = components['schemas']['TrackerWorkItem']
export type TrackerWorkItemTombstone = components['schemas']['TrackerWorkItemTombstone']

/** A list's entry that is an item, not the tombstone of a deleted one (which only `updatedSince` lists). */
export function isWorkItem (entry: TrackerWorkItem | TrackerWorkItemTombstone): entry is TrackerWorkItem {
  return !('deleted' in entry)
}

const PROJECTS = '/api/projects/{projectId}/tracker/projects'
const PROJECT = `${PROJECTS}/{lpId}` as const
const ITEMS = `${PROJECT}/work-items` as const
const ITEM = `${ITEMS}/{itemId}` as const

/**
 * The tracker (docs/tracker.md) for `admin.tracker`: tracker projects, their states and labels, work items with the
 * filter grammar (`filter`: a TrackerFilter as JSON text), comments and activity; the rest through `admin.api`.
 */
export function trackerMethods (admin: { readonly api: Http['api'] }) {
  const inProject = (projectId: string, lpId: string) => ({ params: { path: { projectId, lpId } } })
  const inItem = (projectId: string, lpId: string, itemId: string) => ({ params: { path: { projectId, lpId, itemId } } })
  return {
    projects: async (projectId: string, query?: QueryOf<typeof PROJECTS, 'get'>) => await unwrap(admin.api.GET(PROJECTS, { params: { path: { projectId }, query } })),
    createProject: async (projectId: string, body: BodyOf<typeof PROJECTS, 'post'>) => await unwrap(admin.api.POST(PROJECTS, { params: { path: { projectId } }, body })),
    project: async (projectId: string, lpId: string) => await unwrap(admin.api.GET(PROJECT, inProject(projectId, lpId))),
    /** The workflow states in board order (`sequence`). */
    states: async (projectId: string, lpId: string) => await unwrap(admin.api.GET(`${PROJECT}/states`, { params: { path: { projectId, lpId }, query: { limit: 200 } } })),
    labels: async (projectId: string, lpId: string) => await unwrap(admin.api.GET(`${PROJECT}/labels`, { params: { path: { projectId, lpId }, query: { limit: 200 } } })),
    createLabel: async (projectId: string, lpId: string, body: BodyOf<`${typeof PROJECT}/labels`, 'post'>) =>
      await unwrap(admin.api.POST(`${PROJECT}/labels`, { ...inProject(projectId, lpId), body })),
    /** Everyone who may work in the platform project's tracker, with name, email and their role in each tracker project. */
    people: async (projectId: string, query?: QueryOf<'/api/projects/{projectId}/tracker/members', 'get'>) =>
      await unwrap(admin.api.GET('/api/projects/{projectId}/tracker/members', { params: { path: { projectId }, query } })),
    /** A page of work items: `filter` (a TrackerFilter as JSON), `orderBy`, `cursor` (the last page's `nextCursor`), `limit`. */
    workItems: async (projectId: string, lpId: string, query?: QueryOf<typeof ITEMS, 'get'>) =>
      await unwrap(admin.api.GET(ITEMS, { params: { path: { projectId, lpId }, query } })),
    createWorkItem: async (projectId: string, lpId: string, body: BodyOf<typeof ITEMS, 'post'>) => await unwrap(admin.api.POST(ITEMS, { ...inProject(projectId, lpId), body })),
    workItem: async (projectId: string, lpId: string, itemId: string) => await unwrap(admin.api.GET(ITEM, inItem(projectId, lpId, itemId))),
    /** Changes an item; with `ifMatch` (the version read) only if nobody changed it since (else 412 `APP_TRACKER_VERSION_MISMATCH`). */
    updateWorkItem: async (projectId: string, lpId: string, itemId: string, body: BodyOf<typeof ITEM, 'patch'>, options: { ifMatch?: number } = {}) =>
      await unwrap(admin.api.PATCH(ITEM, {
        params: { path: { projectId, lpId, itemId }, ...(options.ifMatch === undefined ? {} : { header: { 'if-match': `"${options.ifMatch}"` } }) },
        body
      })),
    comments: async (projectId: string, lpId: string, itemId: string) => await unwrap(admin.api.GET(`${ITEM}/comments`, inItem(projectId, lpId, itemId))),
    addComment: async (projectId: string, lpId: string, itemId: string, body: BodyOf<`${typeof ITEM}/comments`, 'post'>) =>
      await unwrap(admin.api.POST(`${ITEM}/comments`, { ...inItem(projectId, lpId, itemId), body })),
    /** The item's changes, one entry per field changed, oldest first. */
    activity: async (projectId: string, lpId: string, itemId: string) => await unwrap(admin.api.GET(`${ITEM}/activity`, inItem(projectId, lpId, itemId)))
  }
}
