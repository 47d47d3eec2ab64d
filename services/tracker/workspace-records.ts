import type { Store, WithId } from '../store/types.js'
import type { OrderByT, TrackerFilterT } from '../../schemas/tracker-filters.js'
import type { PriorityT } from '../../schemas/tracker-work-items.js'
import type { FavoriteKindT, RecentKindT, StickyT } from '../../schemas/tracker-workspace.js'

/**
 * The workspace level's documents (issue 31): each names its platform
 * project, and the personal ones their owner, whose id every read and write
 * carries in its filter.
 */
export const WORKSPACE_COLLECTIONS = {
  stickies: 'tracker_stickies',
  drafts: 'tracker_drafts',
  recents: 'tracker_recents',
  favorites: 'tracker_favorites',
  views: 'tracker_workspace_views'
} as const

export type StickyRecord = WithId<{
  projectId: string
  ownerId: string
  name: string
  description: string
  color: StickyT['color']
  sortOrder: number
  createdAt: Date
  updatedAt: Date
}>

export type DraftRecord = WithId<{
  projectId: string
  ownerId: string
  title: string
  description: string
  priority: PriorityT
  startDate: string | null
  targetDate: string | null
  /** Set by the first step of a promotion: the tracker project it goes to, fixed from then on (docs/tracker.md, "Drafts"). */
  promotingTo: string | null
  createdAt: Date
  updatedAt: Date
}>

/** `_id` is `<projectId>:<userId>:<kind>:<entityId>`, so opening a thing again moves its one entry up. */
export type RecentRecord = WithId<{
  projectId: string
  userId: string
  kind: RecentKindT
  lpId: string
  entityId: string
  openedAt: Date
}>

export type FavoriteRecord = WithId<{
  projectId: string
  userId: string
  kind: FavoriteKindT
  lpId: string
  entityId: string
  /** `<userId>:<kind>:<entityId>`, unique: a thing is a favorite once. */
  key: string
  sortOrder: number
  createdAt: Date
}>

export type WorkspaceViewRecord = WithId<{
  projectId: string
  name: string
  description: string
  filter: TrackerFilterT | null
  orderBy: OrderByT
  access: 'private' | 'public'
  locked: boolean
  ownerId: string
  createdAt: Date
  updatedAt: Date
}>

/** Everything of the workspace level a deleted platform project held; a sweep, so a run cut short is finished by the next. */
export async function purgeWorkspace (store: Store, projectId: string): Promise<void> {
  for (const name of Object.values(WORKSPACE_COLLECTIONS)) await store.extensions.sweep(name).deleteMany({ projectId })
}
