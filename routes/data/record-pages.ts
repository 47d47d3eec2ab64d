import type { ListPage } from '../../services/collections/records.js'
import { frozenJson } from '../frozen-json.js'

/**
 * The list envelope's JSON text. A record unchanged since an earlier page is
 * the same frozen instance and reuses its text instead of being written
 * again, which is most of the cost of a page.
 */
export function listPageJson (envelope: { success: true, data: ListPage }): string {
  const { items, nextCursor, total } = envelope.data
  const parts = new Array<string>(items.length)
  for (let i = 0; i < items.length; i++) parts[i] = frozenJson(items[i])
  const tail = total === undefined ? '' : `,"total":${total}`
  return `{"success":true,"data":{"items":[${parts.join(',')}],"nextCursor":${JSON.stringify(nextCursor)}${tail}}}`
}
