import type { ListPage } from '../../services/collections/records.js'
import type { ApiRecord } from '../../services/collections/record-fields.js'

// JSON text of each frozen (shared) API record, made once per instance.
const recordTexts = new WeakMap<ApiRecord, string>()

function recordJson (record: ApiRecord): string {
  if (!Object.isFrozen(record)) return JSON.stringify(record)
  let text = recordTexts.get(record)
  if (text === undefined) {
    text = JSON.stringify(record)
    recordTexts.set(record, text)
  }
  return text
}

/**
 * The list envelope's JSON text. Records are plain JSON values already
 * (strings, numbers, booleans, nested arrays and objects, dates as ISO text),
 * so JSON.stringify writes what the response schema describes; a record
 * unchanged since an earlier page reuses its text instead of being written
 * again, which is most of the cost of a page.
 */
export function listPageJson (envelope: { success: true, data: ListPage }): string {
  const { items, nextCursor, total } = envelope.data
  const parts = new Array<string>(items.length)
  for (let i = 0; i < items.length; i++) parts[i] = recordJson(items[i])
  const tail = total === undefined ? '' : `,"total":${total}`
  return `{"success":true,"data":{"items":[${parts.join(',')}],"nextCursor":${JSON.stringify(nextCursor)}${tail}}}`
}
