import { randomBytes } from 'node:crypto'
import { commonErrors } from './errors.js'

/** Organizations and projects: named things with a URL-safe slug and a description. */
const SLUG = /^[a-z0-9](?:[a-z0-9-]{0,46}[a-z0-9])?$/

export function checkSlug (slug: string): void {
  if (!SLUG.test(slug)) throw commonErrors.invalidSlug()
}

export function checkName (raw: string): string {
  const name = raw.trim()
  if (name.length === 0) throw commonErrors.invalidName()
  return name
}

/** The latin letters and digits of a name; empty when it has none (a suffix then makes it usable). */
export function slugFrom (name: string): string {
  return name.toLowerCase().normalize('NFKD').replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 42).replace(/-+$/, '')
}

/** A derived slug, with a random suffix on retries or when the name gave nothing usable. */
export function withSuffix (base: string, attempt: number, fallback: string): string {
  if (base !== '' && attempt === 0) return base
  return `${base === '' ? fallback : base}-${randomBytes(3).toString('hex')}`
}

/** The validated `$set` of an update of name, slug and description. */
export function namedChanges (input: { name?: string, slug?: string, description?: string }): { name?: string, slug?: string, description?: string } {
  const changes: { name?: string, slug?: string, description?: string } = {}
  if (input.name !== undefined) changes.name = checkName(input.name)
  if (input.slug !== undefined) {
    checkSlug(input.slug)
    changes.slug = input.slug
  }
  if (input.description !== undefined) changes.description = input.description.trim()
  return changes
}
