/**
 * SQLite folds ASCII case in identifiers while MongoDB names are
 * case-sensitive, so upper-case letters are escaped (`A` → `^a`). `|` is
 * escaped too, which keeps it free as the separator in index names.
 */
function escapeName (name: string): string {
  return name.replace(/[A-Z^|]/g, (char) => char === '^' ? '^^' : char === '|' ? '^!' : '^' + char.toLowerCase())
}

function unescapeName (escaped: string): string {
  return escaped.replace(/\^(.)/g, (_, char: string) => char === '^' ? '^' : char === '!' ? '|' : char.toUpperCase())
}

const TABLE_PREFIX = 'c|'
const INDEX_PREFIX = 'x|'

/** A double-quoted SQL identifier; embedded quotes are doubled. */
export function quoteIdentifier (identifier: string): string {
  return '"' + identifier.replace(/"/g, '""') + '"'
}

/** A single-quoted SQL string literal, for text that must be inlined (JSON paths in index expressions). */
export function quoteLiteral (text: string): string {
  return "'" + text.replace(/'/g, "''") + "'"
}

export function tableName (collection: string): string {
  return TABLE_PREFIX + escapeName(collection)
}

export function collectionOfTable (table: string): string | null {
  return table.startsWith(TABLE_PREFIX) ? unescapeName(table.slice(TABLE_PREFIX.length)) : null
}

/** SQLite index names share one namespace per file; MongoDB's are per collection. */
export function sqlIndexName (collection: string, index: string): string {
  return INDEX_PREFIX + escapeName(collection) + '|' + escapeName(index)
}
