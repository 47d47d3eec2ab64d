import { Type, type TSchema } from '@sinclair/typebox'
import { Deleted, Id } from './common.js'
import { Created, Envelope, ETAG, withHeaders } from './envelope.js'
import { FileResponses, MAX_CHUNKS, UploadSession } from './files.js'
import {
  AutomationSettings, Estimate, IssueType, Page, TRACKER_LIMITS, TrackerLabel, TrackerMember, TrackerProject, TrackerState
} from './tracker.js'
import { Burndown, Cycle, Module, PageVersion, SavedView, TrackerPage, TransferResult } from './tracker-planning.js'
import {
  Activity, Attachment, BulkPatchResult, Comment, CountResult, Emoji, Link, ReactionSummary, Relation, Subscriber, WorkItem, WorkItemTombstone
} from './tracker-work-items.js'

/**
 * The tracker family's contracts, part 4: what the routes add around the
 * services' schemas: path parameters, the headers they read, and each
 * route's success answer.
 */

const TrackerParams = { projectId: Id }
const InProject = { ...TrackerParams, lpId: Id }
const OnItem = { ...InProject, itemId: Id }

export const PlatformTrackerParams = Type.Object(TrackerParams)
export const TrackerProjectPath = Type.Object(InProject)
export const MemberParams = Type.Object({ ...InProject, userId: Id })
export const StateParams = Type.Object({ ...InProject, stateId: Id })
export const LabelParams = Type.Object({ ...InProject, labelId: Id })
export const IssueTypeParams = Type.Object({ ...InProject, typeId: Id })
export const EstimateParams = Type.Object({ ...InProject, estimateId: Id })
export const ItemParams = Type.Object(OnItem)
export const CommentParams = Type.Object({ ...OnItem, commentId: Id })
export const CommentReactionParams = Type.Object({ ...OnItem, commentId: Id, emoji: Emoji })
export const ItemReactionParams = Type.Object({ ...OnItem, emoji: Emoji })
export const LinkParams = Type.Object({ ...OnItem, linkId: Id })
export const RelationParams = Type.Object({ ...OnItem, relationId: Id })
export const SubscriberParams = Type.Object({ ...OnItem, userId: Id })
export const AttachmentParams = Type.Object({ ...OnItem, attachmentId: Id })
export const AttachmentUploadParams = Type.Object({ ...OnItem, sessionId: Id })
export const AttachmentChunkParams = Type.Object({ ...OnItem, sessionId: Id, index: Type.Integer({ minimum: 0, maximum: MAX_CHUNKS - 1 }) })
export const CycleParams = Type.Object({ ...InProject, cycleId: Id })
export const CycleItemParams = Type.Object({ ...InProject, cycleId: Id, itemId: Id })
export const ModuleParams = Type.Object({ ...InProject, moduleId: Id })
export const ViewParams = Type.Object({ ...InProject, viewId: Id })
export const PageParams = Type.Object({ ...InProject, pageId: Id })
export const PageVersionParams = Type.Object({
  ...InProject,
  pageId: Id,
  versionId: Type.String({ minLength: 1, maxLength: 96, pattern: '^[0-9A-Za-z_:-]+$', description: 'A version\'s id as its list gives it (`<pageId>:<n>`)' })
})
export const KeyParams = Type.Object({
  ...TrackerParams,
  key: Type.String({ minLength: 3, maxLength: 40, description: 'A work item key, `<IDENTIFIER>-<number>`; letter case aside', examples: ['WEB-42'] })
})

const IfMatch = Type.String({ maxLength: 64, description: 'The version the client read, as its ETag gave it (`"3"`): the write applies only at that version (412 otherwise)' })
const IdempotencyKey = Type.String({
  minLength: 1,
  maxLength: TRACKER_LIMITS.idempotencyKeyLength,
  pattern: '^[\\x21-\\x7e]+$',
  description: 'A key of the client\'s choosing: a retry with the same key and body gets the first answer, and creates nothing twice (kept a day)'
})
export const IfMatchHeaders = Type.Object({ 'if-match': Type.Optional(IfMatch) })
export const IdempotencyHeaders = Type.Object({ 'idempotency-key': Type.Optional(IdempotencyKey) })

const Tagged = <T extends TSchema>(schema: T) => withHeaders(Envelope(schema), ETAG)
const TaggedCreated = <T extends TSchema>(schema: T) => ({ ...Created(schema), headers: { ...Created(schema).headers, ...ETAG } })
const one = <T extends TSchema>(view: T) => ({ 200: Envelope(Type.Ref(view)) })
const created = <T extends TSchema>(view: T) => ({ 201: Created(Type.Ref(view)) })
const listOf = <T extends TSchema>(view: T) => ({ 200: Envelope(Page(Type.Ref(view))) })

/** Each route's success answer: `Envelope(…)`, `Created(…)` (Location), with `ETag` where the view has a version. */
export const TrackerResponses = {
  deleted: { 200: Envelope(Deleted) },
  project: { 200: Tagged(Type.Ref(TrackerProject)) },
  projectCreated: { 201: TaggedCreated(Type.Ref(TrackerProject)) },
  projectList: listOf(TrackerProject),
  member: one(TrackerMember),
  memberCreated: created(TrackerMember),
  memberList: listOf(TrackerMember),
  automation: one(AutomationSettings),
  state: one(TrackerState),
  stateCreated: created(TrackerState),
  stateList: listOf(TrackerState),
  label: one(TrackerLabel),
  labelCreated: created(TrackerLabel),
  labelList: listOf(TrackerLabel),
  issueType: one(IssueType),
  issueTypeCreated: created(IssueType),
  issueTypeList: listOf(IssueType),
  estimate: one(Estimate),
  estimateCreated: created(Estimate),
  estimateList: listOf(Estimate),
  workItem: { 200: Tagged(Type.Ref(WorkItem)) },
  workItemCreated: { 201: TaggedCreated(Type.Ref(WorkItem)) },
  workItemList: {
    200: Envelope(Page(Type.Union([Type.Ref(WorkItem), Type.Ref(WorkItemTombstone)], { description: 'Tombstones only in an `updatedSince` page' })))
  },
  workItemPage: listOf(WorkItem),
  count: { 200: Envelope(CountResult) },
  bulk: { 200: Envelope(BulkPatchResult) },
  comment: one(Comment),
  commentCreated: created(Comment),
  commentList: listOf(Comment),
  reactions: { 200: Envelope(Type.Array(ReactionSummary)) },
  reactionsAdded: { 201: Created(Type.Array(ReactionSummary)) },
  link: one(Link),
  linkCreated: created(Link),
  linkList: listOf(Link),
  relationCreated: created(Relation),
  relationList: listOf(Relation),
  subscriberCreated: created(Subscriber),
  subscriberList: listOf(Subscriber),
  activityList: listOf(Activity),
  attachment: one(Attachment),
  attachmentList: listOf(Attachment),
  uploadStarted: created(UploadSession),
  upload: one(UploadSession),
  download: FileResponses.download,
  cycle: { 200: Tagged(Type.Ref(Cycle)) },
  cycleCreated: { 201: TaggedCreated(Type.Ref(Cycle)) },
  cycleList: listOf(Cycle),
  transfer: { 200: Envelope(TransferResult) },
  burndown: { 200: Envelope(Burndown) },
  module: { 200: Tagged(Type.Ref(Module)) },
  moduleCreated: { 201: TaggedCreated(Type.Ref(Module)) },
  moduleList: listOf(Module),
  view: { 200: Tagged(Type.Ref(SavedView)) },
  viewCreated: { 201: TaggedCreated(Type.Ref(SavedView)) },
  viewList: listOf(SavedView),
  page: { 200: Tagged(Type.Ref(TrackerPage)) },
  pageCreated: { 201: TaggedCreated(Type.Ref(TrackerPage)) },
  pageList: listOf(TrackerPage),
  pageVersion: one(PageVersion),
  pageVersionList: listOf(PageVersion)
}
