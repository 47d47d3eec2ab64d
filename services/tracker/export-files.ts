import { PassThrough } from 'node:stream'
import type { ExportFormatT } from '../../schemas/tracker-reports.js'

/**
 * The files an export writes, from rows the export service made: CSV (RFC
 * 4180, UTF-8 with a BOM so spreadsheet programs read it as UTF-8), JSON,
 * and XLSX written with exceljs.
 */

export interface ExportColumn { key: string, header: string }

export const ITEM_COLUMNS: readonly ExportColumn[] = [
  { key: 'key', header: 'Key' },
  { key: 'title', header: 'Title' },
  { key: 'state', header: 'State' },
  { key: 'stateGroup', header: 'State group' },
  { key: 'priority', header: 'Priority' },
  { key: 'assignees', header: 'Assignees' },
  { key: 'labels', header: 'Labels' },
  { key: 'estimate', header: 'Estimate' },
  { key: 'startDate', header: 'Start date' },
  { key: 'targetDate', header: 'Target date' },
  { key: 'cycle', header: 'Cycle' },
  { key: 'modules', header: 'Modules' },
  { key: 'createdBy', header: 'Created by' },
  { key: 'createdAt', header: 'Created at' },
  { key: 'updatedAt', header: 'Updated at' },
  { key: 'completedAt', header: 'Completed at' },
  { key: 'description', header: 'Description' }
]

export const COMMENT_COLUMNS: readonly ExportColumn[] = [
  { key: 'item', header: 'Key' },
  { key: 'author', header: 'Author' },
  { key: 'createdAt', header: 'Created at' },
  { key: 'text', header: 'Comment' }
]

export type Cell = string | number | null
export type Row = Record<string, Cell>
export interface ExportContent { items: Row[], comments: Row[] | null, meta: Record<string, unknown> }

export const CONTENT_TYPES: Record<ExportFormatT, string> = {
  csv: 'text/csv; charset=utf-8',
  json: 'application/json',
  xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet'
}

/** A spreadsheet program runs a cell starting with one of these as a formula: CSV cells that do are written with a leading `'`. */
const FORMULA_START = /^[=+\-@\t\r]/

function csvCell (value: Cell): string {
  if (value === null) return ''
  let text = String(value)
  if (typeof value === 'string' && FORMULA_START.test(text)) text = `'${text}`
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text
}

function csv (content: ExportContent): Buffer {
  const columns = content.comments === null ? ITEM_COLUMNS : [...ITEM_COLUMNS, { key: 'comments', header: 'Comments' }]
  const byItem = new Map<string, string[]>()
  for (const comment of content.comments ?? []) {
    const list = byItem.get(String(comment.item)) ?? []
    list.push(`${String(comment.author)} (${String(comment.createdAt)}): ${String(comment.text)}`)
    byItem.set(String(comment.item), list)
  }
  const lines = [columns.map((column) => csvCell(column.header)).join(',')]
  for (const row of content.items) {
    const cells: Row = { ...row, comments: (byItem.get(String(row.key)) ?? []).join('\n\n') }
    lines.push(columns.map((column) => csvCell(cells[column.key] ?? null)).join(','))
  }
  return Buffer.from(`\uFEFF${lines.join('\r\n')}\r\n`, 'utf8')
}

/** Written with exceljs's streaming writer (no shared strings, no styles): rows are committed as they come, which is several times faster. */
async function xlsx (content: ExportContent): Promise<Buffer> {
  // Loaded on first use: exceljs is the heaviest module the server would otherwise load at start (~0.6 s of CPU), for exports alone.
  const { default: ExcelJS } = await import('exceljs')
  const chunks: Buffer[] = []
  const stream = new PassThrough()
  stream.on('data', (chunk: Buffer) => chunks.push(chunk))
  const workbook = new ExcelJS.stream.xlsx.WorkbookWriter({ stream, useSharedStrings: false, useStyles: false })
  workbook.creator = 'Plinth'
  const sheet = workbook.addWorksheet('Work items')
  sheet.columns = ITEM_COLUMNS.map((column) => ({ header: column.header, key: column.key, width: column.key === 'title' || column.key === 'description' ? 50 : 16 }))
  for (const row of content.items) sheet.addRow(row).commit()
  sheet.commit()
  if (content.comments !== null) {
    const comments = workbook.addWorksheet('Comments')
    comments.columns = COMMENT_COLUMNS.map((column) => ({ header: column.header, key: column.key, width: column.key === 'text' ? 80 : 20 }))
    for (const row of content.comments) comments.addRow(row).commit()
    comments.commit()
  }
  await workbook.commit()
  return Buffer.concat(chunks)
}

export async function writeExportFile (format: ExportFormatT, content: ExportContent): Promise<Buffer> {
  switch (format) {
    case 'csv': return csv(content)
    case 'xlsx': return await xlsx(content)
    case 'json': {
      const byItem = new Map<string, Row[]>()
      for (const comment of content.comments ?? []) byItem.set(String(comment.item), [...(byItem.get(String(comment.item)) ?? []), comment])
      const items = content.items.map((row) => content.comments === null ? row : { ...row, comments: byItem.get(String(row.key)) ?? [] })
      return Buffer.from(JSON.stringify({ ...content.meta, items }), 'utf8')
    }
  }
}
