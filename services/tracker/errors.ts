import { AppError, fieldIssue, type ErrorDetails } from '../errors.js'

/**
 * The tracker family's error catalogue: every `APP_TRACKER_*` code once, with
 * its status and message template (`{name}` is filled from the parameters).
 * Services throw through `trackerError` and nothing else writes these codes.
 */
export const TRACKER_ERRORS = {
  // 400: the request names something impossible
  APP_TRACKER_INVALID_FILTER: { status: 400, message: '{path}: {problem}' },
  APP_TRACKER_INVALID_IDENTIFIER: { status: 400, message: 'An identifier is 1 to 12 letters and digits starting with a letter' },
  APP_TRACKER_INVALID_TIMEZONE: { status: 400, message: '"{timezone}" is not an IANA timezone' },
  APP_TRACKER_INVALID_REFERENCE: { status: 400, message: '{path}: {problem}' },
  APP_TRACKER_INVALID_VALUE: { status: 400, message: '{path}: {problem}' },
  APP_TRACKER_INVALID_BULK: { status: 400, message: 'Give either `ids` with one `patch`, or `items` each with its own patch' },
  APP_TRACKER_INVALID_IDEMPOTENCY_KEY: { status: 400, message: 'Idempotency-Key must be 1 to 255 visible ASCII characters' },
  APP_TRACKER_NOT_A_MEMBER: { status: 400, message: '{path}: {userId} is not a member of this tracker project' },
  APP_TRACKER_RELATION_SELF: { status: 400, message: 'An item cannot be related to itself' },
  APP_TRACKER_INVALID_KEY: { status: 400, message: '"{key}" is not a work item key (<IDENTIFIER>-<number>)' },
  // 403: the caller's tracker role does not reach
  APP_TRACKER_ROLE_REQUIRED: { status: 403, message: 'This needs the {role} role in the tracker project' },
  APP_TRACKER_GUEST_REFUSED: { status: 403, message: 'Guests may not {action}' },
  APP_TRACKER_NOT_YOURS: { status: 403, message: 'Only its {owner} or a project admin may {action}' },
  // 404
  APP_TRACKER_PROJECT_NOT_FOUND: { status: 404, message: 'Tracker project not found' },
  APP_TRACKER_MEMBER_NOT_FOUND: { status: 404, message: 'Member not found' },
  APP_TRACKER_STATE_NOT_FOUND: { status: 404, message: 'State not found' },
  APP_TRACKER_LABEL_NOT_FOUND: { status: 404, message: 'Label not found' },
  APP_TRACKER_ISSUE_TYPE_NOT_FOUND: { status: 404, message: 'Issue type not found' },
  APP_TRACKER_ESTIMATE_NOT_FOUND: { status: 404, message: 'Estimate not found' },
  APP_TRACKER_ITEM_NOT_FOUND: { status: 404, message: 'Work item not found' },
  APP_TRACKER_COMMENT_NOT_FOUND: { status: 404, message: 'Comment not found' },
  APP_TRACKER_REACTION_NOT_FOUND: { status: 404, message: 'You have not reacted with {emoji}' },
  APP_TRACKER_LINK_NOT_FOUND: { status: 404, message: 'Link not found' },
  APP_TRACKER_RELATION_NOT_FOUND: { status: 404, message: 'Relation not found' },
  APP_TRACKER_SUBSCRIBER_NOT_FOUND: { status: 404, message: 'Not subscribed' },
  APP_TRACKER_ATTACHMENT_NOT_FOUND: { status: 404, message: 'Attachment not found' },
  APP_TRACKER_CYCLE_NOT_FOUND: { status: 404, message: 'Cycle not found' },
  APP_TRACKER_MODULE_NOT_FOUND: { status: 404, message: 'Module not found' },
  APP_TRACKER_VIEW_NOT_FOUND: { status: 404, message: 'View not found' },
  APP_TRACKER_PAGE_NOT_FOUND: { status: 404, message: 'Page not found' },
  APP_TRACKER_PAGE_VERSION_NOT_FOUND: { status: 404, message: 'Page version not found' },
  APP_TRACKER_INTAKE_NOT_FOUND: { status: 404, message: 'Intake item not found' },
  // 409: the current state stands in the way
  APP_TRACKER_LIMIT_REACHED: { status: 409, message: 'A {what} holds at most {limit} {items}' },
  APP_TRACKER_IDENTIFIER_TAKEN: { status: 409, message: 'The identifier {identifier} is taken in this platform project (now or formerly)' },
  APP_TRACKER_NAME_TAKEN: { status: 409, message: 'A {what} named "{name}" exists already (letter case aside)' },
  APP_TRACKER_ALREADY_MEMBER: { status: 409, message: '{userId} is a member already' },
  APP_TRACKER_PROJECT_ARCHIVED: { status: 409, message: 'The tracker project is archived; restore it first' },
  APP_TRACKER_FEATURE_DISABLED: { status: 409, message: '{feature} are switched off in this tracker project' },
  APP_TRACKER_STATE_IN_USE: { status: 409, message: 'The state {problem}: give targetStateId' },
  APP_TRACKER_STATE_GROUP_FIXED: { status: 409, message: '{problem}' },
  APP_TRACKER_LABEL_DEPTH: { status: 409, message: 'Labels nest one level: {problem}' },
  APP_TRACKER_IN_USE: { status: 409, message: 'The {what} is used by {count} item(s)' },
  APP_TRACKER_ITEM_ARCHIVED: { status: 409, message: 'The item is archived; restore it (archived: false) before changing it' },
  APP_TRACKER_ARCHIVE_OPEN_ITEM: { status: 409, message: 'Only completed or cancelled items can be archived' },
  APP_TRACKER_PARENT_LOOP: { status: 409, message: '{problem}' },
  APP_TRACKER_RELATION_EXISTS: { status: 409, message: 'These items are related already ({type})' },
  APP_TRACKER_LINK_EXISTS: { status: 409, message: 'The item links this URL already' },
  APP_TRACKER_REACTION_EXISTS: { status: 409, message: 'You reacted with {emoji} already' },
  APP_TRACKER_CYCLE_OVERLAP: { status: 409, message: 'The dates overlap the cycle "{name}" ({startDate} to {endDate})' },
  APP_TRACKER_CYCLE_COMPLETED: { status: 409, message: 'The cycle "{name}" is completed and read-only' },
  APP_TRACKER_TRANSFER_TARGET: { status: 409, message: '{problem}' },
  APP_TRACKER_PAGE_ARCHIVED: { status: 409, message: 'The page is archived; restore it first' },
  APP_TRACKER_INTAKE_DECIDED: { status: 409, message: 'The intake item is {status}; {problem}' },
  APP_TRACKER_SORT_GAP: { status: 409, message: 'No room left between these items; give sortOrder values instead' },
  APP_TRACKER_CHANGED: { status: 409, message: 'The {what} changed meanwhile; read it again' },
  APP_TRACKER_IDEMPOTENCY_KEY_REUSED: { status: 409, message: 'This Idempotency-Key was used with another request' },
  APP_TRACKER_IDEMPOTENCY_IN_PROGRESS: { status: 409, message: 'A request with this Idempotency-Key is still running; retry shortly' },
  // 412, 423
  APP_TRACKER_VERSION_MISMATCH: { status: 412, message: 'If-Match does not hold: the {what} is at version {actual}' },
  APP_TRACKER_PAGE_LOCKED: { status: 423, message: 'The page is locked; unlock it first' },
  APP_TRACKER_VIEW_LOCKED: { status: 423, message: 'The view is locked; its owner or a project admin may unlock it' }
} as const satisfies Record<string, { status: number, message: string }>

export type TrackerErrorCode = keyof typeof TRACKER_ERRORS
export type TrackerErrorParams = Record<string, string | number>

function fill (template: string, params: TrackerErrorParams): string {
  return template.replace(/\{(\w+)\}/g, (whole, name: string) => Object.hasOwn(params, name) ? String(params[name]) : whole)
}

/** The one way the tracker services make an error: a catalogued code, its parameters, and details of the one shape. */
export function trackerError (code: TrackerErrorCode, params: TrackerErrorParams = {}, details?: ErrorDetails): AppError {
  const entry = TRACKER_ERRORS[code]
  return new AppError(code, entry.status, fill(entry.message, params), details)
}

/** A 400 naming one offending part of the request: `path` as the route validated it (`body.stateId`). */
export function invalidReference (path: string, problem: string): AppError {
  return trackerError('APP_TRACKER_INVALID_REFERENCE', { path, problem }, fieldIssue(path, problem))
}

export function invalidValue (path: string, problem: string): AppError {
  return trackerError('APP_TRACKER_INVALID_VALUE', { path, problem }, fieldIssue(path, problem))
}

/** A filter refused: `path` inside the filter tree, and the field it concerns when there is one. */
export function invalidFilter (path: string, problem: string, field?: string): AppError {
  return trackerError('APP_TRACKER_INVALID_FILTER', { path, problem }, fieldIssue(path, problem, field))
}

export function limitReached (what: string, limit: number, items: string): AppError {
  return trackerError('APP_TRACKER_LIMIT_REACHED', { what, limit, items }, { limit })
}

export function versionMismatch (what: string, expected: number, actual: number): AppError {
  return trackerError('APP_TRACKER_VERSION_MISMATCH', { what, actual }, { expected, actual })
}
