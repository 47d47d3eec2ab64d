import { Type, type Static } from '@sinclair/typebox'

/** Fields every family's schemas share, declared once. */

/** An id as the server mints them (and as path parameters and bodies name them). */
export const Id = Type.String({ minLength: 1, maxLength: 64, pattern: '^[0-9A-Za-z_-]+$' })

/** An instant, as ISO 8601 in UTC. */
export const DateTime = Type.String({ format: 'date-time' })

/**
 * The one answer of a delete, in every family: the envelope around what was
 * deleted, so a client tells its deletes apart without keeping the request,
 * and every answer stays an envelope (no bodiless 204).
 */
export const Deleted = Type.Object({ id: Type.String(), deleted: Type.Literal(true) })
export type DeletedT = Static<typeof Deleted>

/**
 * A 200 whose body is a gzip-compressed tar sent as an attachment (a whole-server backup, a project's export): the
 * one shape of an archive download, described by what the archive holds and how its file is named.
 */
export const GzipArchive = (description: string, fileName: string) => ({
  200: {
    description,
    headers: {
      'Content-Disposition': { type: 'string', description: `\`attachment\`, ${fileName}` },
      'Content-Length': { type: 'integer', description: 'The archive\'s size in bytes' }
    },
    content: { 'application/gzip': { schema: { type: 'string', format: 'binary' } } }
  }
})
