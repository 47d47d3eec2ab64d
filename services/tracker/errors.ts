import { errorCatalogue, fieldIssue } from '../platform/errors.js'

interface Offending { path: string, problem: string }
const offending = ({ path, problem }: Offending) => `${path}: ${problem}`

/**
 * Every code the tracker family answers with, once: services throw
 * `trackerErrors.name(params)`, routes list `trackerErrors.name` in
 * `config.errors`.
 */
export const trackerErrors = errorCatalogue('tracker', {
  // 400: the request names something impossible
  invalidFilter: {
    code: 'APP_TRACKER_INVALID_FILTER',
    status: 400,
    message: ({ path, problem }: Offending & { field?: string }) => `${path}: ${problem}`,
    details: ({ path, problem, field }) => fieldIssue(path, problem, field),
    description: 'the filter breaks the grammar: `details.fields[0]` names the place (`filter.and[1].op`) and the field'
  },
  invalidIdentifier: {
    code: 'APP_TRACKER_INVALID_IDENTIFIER',
    status: 400,
    message: (_: { path: string }) => 'An identifier is 1 to 12 letters and digits starting with a letter',
    details: ({ path }) => fieldIssue(path, 'must be 1 to 12 letters and digits starting with a letter'),
    description: 'the identifier is not 1 to 12 letters and digits starting with a letter'
  },
  invalidTimezone: {
    code: 'APP_TRACKER_INVALID_TIMEZONE',
    status: 400,
    message: ({ timezone }: { timezone: string }) => `"${timezone}" is not an IANA timezone`,
    details: () => fieldIssue('body.timezone', 'is not an IANA timezone'),
    description: 'the timezone is not an IANA timezone name'
  },
  invalidReference: {
    code: 'APP_TRACKER_INVALID_REFERENCE',
    status: 400,
    message: offending,
    details: ({ path, problem }) => fieldIssue(path, problem),
    description: 'an id in the request names nothing usable in this tracker project (a state, label, item, cycle…)'
  },
  invalidValue: {
    code: 'APP_TRACKER_INVALID_VALUE',
    status: 400,
    message: offending,
    details: ({ path, problem }) => fieldIssue(path, problem),
    description: 'a value the schema lets through breaks a rule of the tracker (a blank name, dates out of order…)'
  },
  invalidBulk: {
    code: 'APP_TRACKER_INVALID_BULK',
    status: 400,
    message: 'Give either `ids` with one `patch`, or `items` each with its own patch',
    details: () => fieldIssue('body', 'needs ids with patch, or items'),
    description: 'the bulk patch gives neither `ids` with `patch` nor `items`, or both'
  },
  invalidIdempotencyKey: {
    code: 'APP_TRACKER_INVALID_IDEMPOTENCY_KEY',
    status: 400,
    message: 'Idempotency-Key must be 1 to 255 visible ASCII characters',
    details: () => fieldIssue('headers.idempotency-key', 'must be 1 to 255 visible ASCII characters'),
    description: 'the Idempotency-Key header is not 1 to 255 visible ASCII characters'
  },
  notAMember: {
    code: 'APP_TRACKER_NOT_A_MEMBER',
    status: 400,
    message: offending,
    details: ({ path, problem }) => fieldIssue(path, problem),
    description: 'a person named in the request is not a member of the tracker project (or cannot use the platform project\'s tracker)'
  },
  relationSelf: {
    code: 'APP_TRACKER_RELATION_SELF',
    status: 400,
    message: 'An item cannot be related to itself',
    details: () => fieldIssue('body.itemId', 'is the item itself'),
    description: 'the relation names the item itself'
  },
  invalidKey: {
    code: 'APP_TRACKER_INVALID_KEY',
    status: 400,
    message: ({ key }: { key: string }) => `"${key}" is not a work item key (<IDENTIFIER>-<number>)`,
    details: () => fieldIssue('params.key', 'is not <IDENTIFIER>-<number>'),
    description: 'the key is not `<IDENTIFIER>-<number>`'
  },
  // 403: the caller's tracker role does not reach
  roleRequired: {
    code: 'APP_TRACKER_ROLE_REQUIRED',
    status: 403,
    message: ({ role }: { role: string }) => `This needs the ${role} role in the tracker project`,
    description: 'the caller\'s role in the tracker project is not enough (admin configures)'
  },
  guestRefused: {
    code: 'APP_TRACKER_GUEST_REFUSED',
    status: 403,
    message: ({ action }: { action: string }) => `Guests may not ${action}`,
    description: 'the caller is a guest of the tracker project, and guests may not do this'
  },
  notYours: {
    code: 'APP_TRACKER_NOT_YOURS',
    status: 403,
    message: ({ owner, action }: { owner: string, action: string }) => `Only its ${owner} or a project admin may ${action}`,
    description: 'only whoever made it, or an admin of the tracker project, may do this'
  },
  // 404
  projectNotFound: {
    code: 'APP_TRACKER_PROJECT_NOT_FOUND',
    status: 404,
    message: 'Tracker project not found',
    description: 'no such tracker project, or the caller may not see it (a private one they are not a member of)'
  },
  memberNotFound: { code: 'APP_TRACKER_MEMBER_NOT_FOUND', status: 404, message: 'Member not found', description: 'the person is not a member of the tracker project' },
  stateNotFound: { code: 'APP_TRACKER_STATE_NOT_FOUND', status: 404, message: 'State not found', description: 'no such state in the tracker project' },
  labelNotFound: { code: 'APP_TRACKER_LABEL_NOT_FOUND', status: 404, message: 'Label not found', description: 'no such label in the tracker project' },
  issueTypeNotFound: { code: 'APP_TRACKER_ISSUE_TYPE_NOT_FOUND', status: 404, message: 'Issue type not found', description: 'no such issue type in the tracker project' },
  estimateNotFound: { code: 'APP_TRACKER_ESTIMATE_NOT_FOUND', status: 404, message: 'Estimate not found', description: 'no such estimate in the tracker project' },
  itemNotFound: {
    code: 'APP_TRACKER_ITEM_NOT_FOUND',
    status: 404,
    message: 'Work item not found',
    description: 'no such work item, or the caller may not see it (a guest\'s view, someone else\'s draft)'
  },
  commentNotFound: { code: 'APP_TRACKER_COMMENT_NOT_FOUND', status: 404, message: 'Comment not found', description: 'no such comment on the item' },
  reactionNotFound: {
    code: 'APP_TRACKER_REACTION_NOT_FOUND',
    status: 404,
    message: ({ emoji }: { emoji: string }) => `You have not reacted with ${emoji}`,
    description: 'the caller has not reacted with this emoji'
  },
  linkNotFound: { code: 'APP_TRACKER_LINK_NOT_FOUND', status: 404, message: 'Link not found', description: 'no such link on the item' },
  relationNotFound: { code: 'APP_TRACKER_RELATION_NOT_FOUND', status: 404, message: 'Relation not found', description: 'no such relation of the item' },
  subscriberNotFound: { code: 'APP_TRACKER_SUBSCRIBER_NOT_FOUND', status: 404, message: 'Not subscribed', description: 'the person is not subscribed to the item' },
  attachmentNotFound: { code: 'APP_TRACKER_ATTACHMENT_NOT_FOUND', status: 404, message: 'Attachment not found', description: 'no such attachment on the item' },
  cycleNotFound: { code: 'APP_TRACKER_CYCLE_NOT_FOUND', status: 404, message: 'Cycle not found', description: 'no such cycle in the tracker project' },
  moduleNotFound: { code: 'APP_TRACKER_MODULE_NOT_FOUND', status: 404, message: 'Module not found', description: 'no such module in the tracker project' },
  viewNotFound: { code: 'APP_TRACKER_VIEW_NOT_FOUND', status: 404, message: 'View not found', description: 'no such view, or it is someone else\'s private view' },
  pageNotFound: { code: 'APP_TRACKER_PAGE_NOT_FOUND', status: 404, message: 'Page not found', description: 'no such page, or it is someone else\'s private page' },
  notificationNotFound: { code: 'APP_TRACKER_NOTIFICATION_NOT_FOUND', status: 404, message: 'Notification not found', description: 'no such notification of the caller\'s' },
  pageVersionNotFound: { code: 'APP_TRACKER_PAGE_VERSION_NOT_FOUND', status: 404, message: 'Page version not found', description: 'no such version of the page' },
  intakeNotFound: { code: 'APP_TRACKER_INTAKE_NOT_FOUND', status: 404, message: 'Intake item not found', description: 'no such intake item in the tracker project' },
  // exports (issue 31)
  exportNotFound: { code: 'APP_TRACKER_EXPORT_NOT_FOUND', status: 404, message: 'Export not found', description: 'no such export of the caller\'s, or it was cleaned up' },
  exportLinkInvalid: {
    code: 'APP_TRACKER_EXPORT_LINK_INVALID',
    status: 403,
    message: 'The download link is not valid or has expired: ask the export for a new one',
    description: 'the signed download link was altered or has expired'
  },
  exportNotReady: {
    code: 'APP_TRACKER_EXPORT_NOT_READY',
    status: 409,
    message: ({ status }: { status: string }) => `The export is ${status}: there is no file to download`,
    description: 'the export has not completed (queued, processing or failed)'
  },
  // the workspace level's personal things (issue 31): each is its owner's alone
  stickyNotFound: { code: 'APP_TRACKER_STICKY_NOT_FOUND', status: 404, message: 'Sticky not found', description: 'no such sticky of the caller\'s' },
  draftNotFound: { code: 'APP_TRACKER_DRAFT_NOT_FOUND', status: 404, message: 'Draft not found', description: 'no such draft of the caller\'s' },
  favoriteNotFound: { code: 'APP_TRACKER_FAVORITE_NOT_FOUND', status: 404, message: 'Favorite not found', description: 'no such favorite of the caller\'s' },
  workspaceViewNotFound: {
    code: 'APP_TRACKER_WORKSPACE_VIEW_NOT_FOUND',
    status: 404,
    message: 'Workspace view not found',
    description: 'no such workspace view, or it is someone else\'s private one'
  },
  draftPromoting: {
    code: 'APP_TRACKER_DRAFT_PROMOTING',
    status: 409,
    message: ({ lpId }: { lpId: string }) => `The draft is being promoted into the tracker project ${lpId}: promote it there to finish`,
    description: 'a promotion of the draft began into another tracker project (the message names it); only that one can finish it, and the draft is fixed until then'
  },
  alreadyFavorite: {
    code: 'APP_TRACKER_ALREADY_FAVORITE',
    status: 409,
    message: 'It is a favorite already',
    description: 'the caller has this one among their favorites already'
  },
  // 409: the current state stands in the way
  limitReached: {
    code: 'APP_TRACKER_LIMIT_REACHED',
    status: 409,
    message: ({ what, limit, items }: { what: string, limit: number, items: string }) => `A ${what} holds at most ${limit} ${items}`,
    details: ({ limit }) => ({ limit }),
    description: 'the project or item holds as many of these as it may; `details.limit` says how many'
  },
  identifierTaken: {
    code: 'APP_TRACKER_IDENTIFIER_TAKEN',
    status: 409,
    message: ({ identifier }: { identifier: string }) => `The identifier ${identifier} is taken in this platform project (now or formerly)`,
    description: 'another tracker project of the platform project has (or had) this identifier'
  },
  nameTaken: {
    code: 'APP_TRACKER_NAME_TAKEN',
    status: 409,
    message: ({ what, name }: { what: string, name: string }) => `A ${what} named "${name}" exists already (letter case aside)`,
    description: 'another one of the tracker project has this name, letter case aside'
  },
  alreadyMember: {
    code: 'APP_TRACKER_ALREADY_MEMBER',
    status: 409,
    message: ({ userId }: { userId: string }) => `${userId} is a member already`,
    description: 'the person is a member already; change their role instead'
  },
  projectArchived: {
    code: 'APP_TRACKER_PROJECT_ARCHIVED',
    status: 409,
    message: 'The tracker project is archived; restore it first',
    description: 'the tracker project is archived, and read-only until restored'
  },
  featureDisabled: {
    code: 'APP_TRACKER_FEATURE_DISABLED',
    status: 409,
    message: ({ feature }: { feature: string }) => `${feature} are switched off in this tracker project`,
    description: 'this part of the tracker (cycles, modules, views, pages, intake) is switched off in the project'
  },
  stateInUse: {
    code: 'APP_TRACKER_STATE_IN_USE',
    status: 409,
    message: ({ problem }: { problem: string, count?: number }) => `The state ${problem}: give targetStateId`,
    details: ({ count }) => count === undefined ? undefined : { count },
    description: 'the state is the default or holds items: deleting it needs `targetStateId`'
  },
  stateGroupFixed: {
    code: 'APP_TRACKER_STATE_GROUP_FIXED',
    status: 409,
    message: ({ problem }: { problem: string }) => problem,
    description: 'the triage state belongs to intake and cannot go'
  },
  labelDepth: {
    code: 'APP_TRACKER_LABEL_DEPTH',
    status: 409,
    message: ({ problem }: { problem: string }) => `Labels nest one level: ${problem}`,
    description: 'labels nest one level only'
  },
  inUse: {
    code: 'APP_TRACKER_IN_USE',
    status: 409,
    message: ({ what, count }: { what: string, count: number }) => `The ${what} is used by ${count} item(s)`,
    details: ({ count }) => ({ count }),
    description: 'items use it (an issue type, an estimate or its points); `details.count` says how many'
  },
  itemArchived: {
    code: 'APP_TRACKER_ITEM_ARCHIVED',
    status: 409,
    message: 'The item is archived; restore it (archived: false) before changing it',
    description: 'the item is archived: restore it (`archived: false`) before changing it'
  },
  archiveOpenItem: {
    code: 'APP_TRACKER_ARCHIVE_OPEN_ITEM',
    status: 409,
    message: 'Only completed or cancelled items can be archived',
    description: 'only completed or cancelled items can be archived'
  },
  parentLoop: {
    code: 'APP_TRACKER_PARENT_LOOP',
    status: 409,
    message: ({ problem }: { problem: string }) => problem,
    description: 'the new parent would make a loop, or nest deeper than allowed'
  },
  relationExists: {
    code: 'APP_TRACKER_RELATION_EXISTS',
    status: 409,
    message: ({ type }: { type: string }) => `These items are related already (${type})`,
    description: 'the two items are related already'
  },
  linkExists: { code: 'APP_TRACKER_LINK_EXISTS', status: 409, message: 'The item links this URL already', description: 'the item links this URL already' },
  reactionExists: {
    code: 'APP_TRACKER_REACTION_EXISTS',
    status: 409,
    message: ({ emoji }: { emoji: string }) => `You reacted with ${emoji} already`,
    description: 'the caller reacted with this emoji already'
  },
  cycleOverlap: {
    code: 'APP_TRACKER_CYCLE_OVERLAP',
    status: 409,
    message: ({ name, startDate, endDate }: { name: string, startDate: string, endDate: string, cycleId: string }) => `The dates overlap the cycle "${name}" (${startDate} to ${endDate})`,
    details: ({ cycleId }) => ({ ids: [cycleId] }),
    description: 'the dates overlap another cycle of the project (however two creates race)'
  },
  cycleCompleted: {
    code: 'APP_TRACKER_CYCLE_COMPLETED',
    status: 409,
    message: ({ name }: { name: string }) => `The cycle "${name}" is completed and read-only`,
    description: 'the cycle is completed and read-only'
  },
  transferTarget: {
    code: 'APP_TRACKER_TRANSFER_TARGET',
    status: 409,
    message: ({ problem }: { problem: string }) => problem,
    description: 'the transfer\'s target is the cycle itself or a completed cycle'
  },
  pageArchived: { code: 'APP_TRACKER_PAGE_ARCHIVED', status: 409, message: 'The page is archived; restore it first', description: 'the page is archived: restore it first' },
  intakeDecided: {
    code: 'APP_TRACKER_INTAKE_DECIDED',
    status: 409,
    message: ({ status, problem }: { status: string, problem: string }) => `The intake item is ${status}; ${problem}`,
    description: 'the intake item was accepted or marked a duplicate, which is final'
  },
  sortGap: {
    code: 'APP_TRACKER_SORT_GAP',
    status: 409,
    message: 'No room left between these items; give sortOrder values instead',
    description: 'no room is left between the two items in board order: give `sortOrder` values instead'
  },
  changed: {
    code: 'APP_TRACKER_CHANGED',
    status: 409,
    message: ({ what }: { what: string }) => `The ${what} changed meanwhile; read it again`,
    description: 'someone else changed it meanwhile, again and again; read it and try again'
  },
  idempotencyKeyReused: {
    code: 'APP_TRACKER_IDEMPOTENCY_KEY_REUSED',
    status: 409,
    message: 'This Idempotency-Key was used with another request',
    description: 'the Idempotency-Key was used with another body'
  },
  idempotencyInProgress: {
    code: 'APP_TRACKER_IDEMPOTENCY_IN_PROGRESS',
    status: 409,
    message: 'A request with this Idempotency-Key is still running; retry shortly',
    description: 'a request with this Idempotency-Key is still running: retry shortly'
  },
  // 412, 423
  versionMismatch: {
    code: 'APP_TRACKER_VERSION_MISMATCH',
    status: 412,
    message: ({ what, actual }: { what: string, expected: number, actual: number }) => `If-Match does not hold: the ${what} is at version ${actual}`,
    details: ({ expected, actual }) => ({ expected, actual }),
    description: 'If-Match names another version than the one stored; `details.actual` is the stored one'
  },
  pageLocked: { code: 'APP_TRACKER_PAGE_LOCKED', status: 423, message: 'The page is locked; unlock it first', description: 'the page is locked: its locker or an admin unlocks it' },
  viewLocked: {
    code: 'APP_TRACKER_VIEW_LOCKED',
    status: 423,
    message: 'The view is locked; its owner or a project admin may unlock it',
    description: 'the view is locked: its owner or an admin unlocks it'
  }
})
