import type { ListPage } from '../../services/collections/records.js'
import { bytesSerializer, frozenJson, joinJson } from '../frozen-json.js'

const PAGE_HEAD = Buffer.from('{"success":true,"data":{"items":[')

/**
 * The list envelope's JSON bytes. A record unchanged since an earlier page is
 * the same frozen instance and reuses its encoded JSON instead of being
 * written again, which is most of the cost of a page.
 */
export const listPageJson = bytesSerializer((envelope: { success: true, data: ListPage }): Buffer => {
  const { items, nextCursor, total } = envelope.data
  const encoded = new Array<Buffer>(items.length)
  for (let i = 0; i < items.length; i++) encoded[i] = frozenJson(items[i])
  const tail = Buffer.from(`],"nextCursor":${JSON.stringify(nextCursor)}${total === undefined ? '' : `,"total":${total}`}}}`)
  return joinJson(PAGE_HEAD, encoded, tail)
})
