import { commonErrors } from '../../services/platform/errors.js'
import { trackerErrors as e } from '../../services/tracker/errors.js'

/** Refusals many tracker routes share; each route adds its own. */

/** Any write into a tracker project: an archived project is read-only. */
export const WRITE = [e.projectArchived]

/** A write conditional on If-Match. */
export const CONDITIONAL = [commonErrors.invalidIfMatch, e.versionMismatch, e.changed]

/** A list: its cursor. */
export const LIST = [commonErrors.invalidCursor]

/** A work item named in the path. */
export const ITEM = [e.itemNotFound]

/** What a work item's fields may meet: references into the project, dates, the tree, archive rules, a guest's limits. */
export const ITEM_FIELDS = [
  e.invalidValue, e.invalidReference, e.notAMember, e.parentLoop, e.itemArchived, e.archiveOpenItem, e.guestRefused, e.featureDisabled,
  e.cycleCompleted, e.sortGap, e.changed
]

/** A keyed create or bulk patch. */
export const IDEMPOTENT = [e.invalidIdempotencyKey, e.idempotencyKeyReused, e.idempotencyInProgress]

/** A work item list: the filter grammar, a saved view, cursors. */
export const ITEM_LIST = [e.invalidFilter, e.invalidValue, e.viewNotFound, e.featureDisabled, commonErrors.invalidCursor]

/** A setting's create or change: names, limits. */
export const SETTING_WRITES = [e.invalidValue, e.invalidReference, e.limitReached, e.nameTaken, e.projectArchived]
