import type Database from 'better-sqlite3'
import type { TextIndexSpec } from '../types.js'
import { quoteIdentifier, quoteLiteral, tableName } from './names.js'

/**
 * The SQL objects of a collection's text index (text-index.ts says how the
 * index works): the view, the FTS5 table and the triggers that feed it. The
 * connection makes and drops them with the collection's table; they sit apart
 * from the search so that the connection need not import the query code.
 */

/** The FTS5 table of a collection's table, which text-index.ts searches. */
export const ftsName = (table: string): string => `s${table.slice(1)}`
const viewName = (table: string): string => `v${table.slice(1)}`

function fieldExpression (row: string, path: string): string {
  const json = quoteLiteral('$' + path.split('.').map((segment) => '."' + segment + '"').join(''))
  return `CASE WHEN json_type(${row}doc, ${json}) = 'text' THEN json_extract(${row}doc, ${json}) END`
}

/** The scope column's name in the FTS5 table; the text fields are f0, f1, … */
export const SCOPE_COLUMN = 'sc'

/**
 * A scope value as the one token the index holds for it: its UTF-8 bytes in hex behind a letter, so no value splits
 * into words or meets the query syntax. `scopeExpression` makes the same token in SQL.
 */
export const scopeToken = (value: string): string => 's' + Buffer.from(value, 'utf8').toString('hex')
export function scopeExpression (row: string, path: string): string {
  return `'s' || lower(hex(${fieldExpression(row, path)}))`
}

/**
 * A scoped index's rows per scope token (`token`, `rows`), kept by the index's triggers in the statement that writes the
 * row: a search learns from a few rows whether its scope values hold every row of the index, and then matches the words
 * alone (text-index.ts). Counting a token's rows in FTS5 walks its every row.
 */
export const scopeRowsName = (table: string): string => `${ftsName(table)}|scopes`

/**
 * The index's vocabulary (FTS5's `fts5vocab`, a row per word: how many rows hold it) as the statement that makes it in
 * the connection's temp schema on first use, and its name: nothing to migrate in the file, and it finds the index by
 * name at each read, so it outlives a rebuild.
 */
export function vocabularyOf (table: string): { create: string, name: string } {
  const name = `temp.${quoteIdentifier(`${ftsName(table)}|vocabulary`)}`
  return { create: `CREATE VIRTUAL TABLE IF NOT EXISTS ${name} USING fts5vocab(main, ${quoteLiteral(ftsName(table))}, 'row')`, name }
}

/** The SQL that creates the index of `collection` (whose table exists) as `spec` declares it, and fills it. */
export function createTextObjects (db: Database.Database, collection: string, spec: TextIndexSpec): void {
  const table = tableName(collection)
  const fts = quoteIdentifier(ftsName(table))
  const fields = Object.keys(spec.fields)
  const scope = spec.scope
  // The scope's token sits in a column of its own (weight 0 in bm25), so the query's words never match it.
  const columns = [...fields.map((_, i) => `f${i}`), ...(scope === undefined ? [] : [SCOPE_COLUMN])]
  const expressions = (row: string): string[] => [...fields.map((path) => fieldExpression(row, path)), ...(scope === undefined ? [] : [scopeExpression(row, scope)])]
  const of = (row: string): string => expressions(row).join(', ')
  const changed = [...fields, ...(scope === undefined ? [] : [scope])].map((path) => `${fieldExpression('old.', path)} IS NOT ${fieldExpression('new.', path)}`).join(' OR ')
  const trigger = (suffix: string): string => quoteIdentifier(`${ftsName(table)}|${suffix}`)
  const rows = quoteIdentifier(scopeRowsName(table))
  const added = (row: string): string => scope === undefined ? '' : `INSERT INTO ${rows} (token, rows) VALUES (${scopeExpression(row, scope)}, 1) ON CONFLICT (token) DO UPDATE SET rows = rows + 1;`
  const removed = (row: string): string => scope === undefined ? '' : `UPDATE ${rows} SET rows = rows - 1 WHERE token = ${scopeExpression(row, scope)};`
  db.exec(`
    CREATE VIEW ${quoteIdentifier(viewName(table))} AS SELECT seq, ${expressions('').map((expression, i) => `${expression} AS ${columns[i]}`).join(', ')} FROM ${quoteIdentifier(table)};
    CREATE VIRTUAL TABLE ${fts} USING fts5(${columns.join(', ')}, content=${quoteLiteral(viewName(table))}, content_rowid='seq', tokenize='unicode61 remove_diacritics 2');
    ${scope === undefined ? '' : `CREATE TABLE ${rows} (token TEXT PRIMARY KEY, rows INTEGER NOT NULL) WITHOUT ROWID;`}
    CREATE TRIGGER ${trigger('i')} AFTER INSERT ON ${quoteIdentifier(table)} BEGIN
      INSERT INTO ${fts} (rowid, ${columns.join(', ')}) VALUES (new.seq, ${of('new.')});
      ${added('new.')}
    END;
    CREATE TRIGGER ${trigger('d')} AFTER DELETE ON ${quoteIdentifier(table)} BEGIN
      INSERT INTO ${fts} (${fts}, rowid, ${columns.join(', ')}) VALUES ('delete', old.seq, ${of('old.')});
      ${removed('old.')}
    END;
    CREATE TRIGGER ${trigger('u')} AFTER UPDATE OF doc ON ${quoteIdentifier(table)} WHEN ${changed} BEGIN
      INSERT INTO ${fts} (${fts}, rowid, ${columns.join(', ')}) VALUES ('delete', old.seq, ${of('old.')});
      INSERT INTO ${fts} (rowid, ${columns.join(', ')}) VALUES (new.seq, ${of('new.')});
      ${removed('old.')}
      ${added('new.')}
    END;
    INSERT INTO ${fts} (${fts}) VALUES ('rebuild');
    ${scope === undefined ? '' : `INSERT INTO ${rows} (token, rows) SELECT ${SCOPE_COLUMN}, count(*) FROM ${quoteIdentifier(viewName(table))} GROUP BY ${SCOPE_COLUMN};`}
  `)
}

/**
 * Whether the objects of a scoped index are those createTextObjects makes now: a file written before lacks the rows
 * per scope, and one whose objects an older build made again (a rollback's rebuild) has the table but triggers that
 * no longer keep it.
 */
export function textObjectsCurrent (db: Database.Database, collection: string, spec: TextIndexSpec): boolean {
  if (spec.scope === undefined) return true
  const table = tableName(collection)
  const rows = quoteIdentifier(scopeRowsName(table))
  const triggers = db.prepare('SELECT sql FROM sqlite_master WHERE type = \'trigger\' AND name IN (?, ?, ?)').pluck().all(...['i', 'd', 'u'].map((suffix) => `${ftsName(table)}|${suffix}`)) as string[]
  return db.prepare('SELECT 1 FROM sqlite_master WHERE type = \'table\' AND name = ?').get(scopeRowsName(table)) !== undefined &&
    triggers.length === 3 && triggers.every((sql) => sql.includes(rows))
}

/** Drops the index's objects (the triggers go with the table or here); the spec stays declared. */
export function dropTextObjects (db: Database.Database, collection: string): void {
  const table = tableName(collection)
  for (const suffix of ['i', 'd', 'u']) db.exec(`DROP TRIGGER IF EXISTS ${quoteIdentifier(`${ftsName(table)}|${suffix}`)}`)
  db.exec(`DROP TABLE IF EXISTS ${quoteIdentifier(ftsName(table))}; DROP TABLE IF EXISTS ${quoteIdentifier(scopeRowsName(table))}; DROP VIEW IF EXISTS ${quoteIdentifier(viewName(table))};`)
}
