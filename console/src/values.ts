import type { DataOf } from '@plinth/sdk/admin'

export type Field = DataOf<'/api/projects/{projectId}/collections/{name}', 'get'>['fields'][number]

/** A field's value as an input shows it. */
export function shown (field: Field, value: unknown): string {
  if (value === undefined || value === null) return ''
  if (field.type === 'json' || (typeof value === 'object' && !Array.isArray(value))) return JSON.stringify(value)
  if (Array.isArray(value)) return value.map(String).join(', ')
  return String(value)
}

/**
 * What an input's text means for the field's type; an empty input is left
 * out (undefined). The server validates the rest and its message is shown.
 */
export function parsed (field: Field, text: string): unknown {
  if (field.type === 'boolean') return text === 'true'
  if (text.trim() === '') return undefined
  switch (field.type) {
    case 'number': return Number(text)
    case 'json': return JSON.parse(text) as unknown
    case 'select':
    case 'relation': return field.multiple === true ? text.split(',').map((part) => part.trim()).filter((part) => part !== '') : text
    default: return text
  }
}

/** The values of a form: each editable field's parsed text. */
export function valuesOf (fields: Field[], texts: Record<string, string>): Record<string, unknown> {
  const values: Record<string, unknown> = {}
  for (const field of fields) {
    const text = texts[field.name]
    if (text === undefined) continue
    const value = parsed(field, text)
    if (value !== undefined) values[field.name] = value
  }
  return values
}

/** The fields a form edits: a file field takes an upload instead. */
export function editable (fields: Field[]): Field[] {
  return fields.filter((field) => field.type !== 'file')
}
