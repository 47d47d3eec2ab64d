import { gitErrors } from './errors.js'

/**
 * What user input may name in git: repository slugs, branch and tag names,
 * object ids and paths inside a tree. Each is checked here before it reaches
 * the git binary or isomorphic-git; nothing a user types ever becomes a path
 * on disk (repositories live under their generated ids).
 */
const REPO_SLUG_PATTERN = '^(?!.*\\.git$)[A-Za-z0-9][A-Za-z0-9._-]{0,99}$'
const REPO_SLUG = new RegExp(REPO_SLUG_PATTERN)
export const MAX_REF_NAME_LENGTH = 255
const SHORT_OBJECT_ID = /^[0-9a-f]{4,40}$/
export const ZERO_OID = '0'.repeat(40)

export function isRepoSlug (slug: string): boolean {
  return REPO_SLUG.test(slug)
}

/** A URL's slug may carry git's `.git` suffix, as clone URLs do. */
export function stripGitSuffix (slug: string): string {
  return slug.endsWith('.git') ? slug.slice(0, -4) : slug
}

/** The reason `name` is not a valid ref name by `git check-ref-format`'s rules, or null when it is. */
export function refNameProblem (name: string): string | null {
  if (name === '') return 'is empty'
  if (name.length > MAX_REF_NAME_LENGTH) return `is longer than ${MAX_REF_NAME_LENGTH} characters`
  if (/[\x00-\x20\x7f~^:?*[\\]/.test(name)) return 'contains a space, a control character or one of ~ ^ : ? * [ \\'
  if (name.startsWith('/') || name.endsWith('/') || name.includes('//')) return 'has an empty path component'
  if (name.includes('..')) return 'contains ".."'
  if (name.includes('@{') || name === '@') return 'contains "@{" or is "@"'
  if (name.endsWith('.')) return 'ends with "."'
  for (const component of name.split('/')) {
    if (component.startsWith('.')) return 'has a component starting with "."'
    if (component.endsWith('.lock')) return 'has a component ending with ".lock"'
  }
  return null
}

/**
 * Why git would read a branch or tag name as something else, or null: an
 * option (`-x`), `HEAD`, or a full ref (`refs/...`), which would nest under
 * refs/heads/refs. The pre-receive hook embeds this function's source, so a
 * push and the REST routes refuse the same names: it uses nothing else.
 */
export function reservedRefNameProblem (name: string): string | null {
  if (name.startsWith('-')) return 'starts with "-"'
  if (name === 'HEAD' || name.startsWith('refs/')) return 'is reserved ("HEAD" or a full refs/ name)'
  return null
}

/** A branch or tag name as `git check-ref-format --branch` takes it, less the names reservedRefNameProblem refuses. */
export function checkRefName (name: string, path: string, what: 'branch' | 'tag'): string {
  const problem = refNameProblem(name) ?? reservedRefNameProblem(name)
  if (problem !== null) throw gitErrors.invalidRefName({ what, problem, path })
  return name
}

/**
 * What a client may give where a commit is wanted: a branch or tag name, a
 * full ref, HEAD, or a (possibly abbreviated) object id.
 */
export function checkRevision (value: string, path: string): string {
  if (value === 'HEAD' || SHORT_OBJECT_ID.test(value) || (refNameProblem(value) === null && !value.startsWith('-'))) return value
  throw gitErrors.invalidRef({ value, path })
}

export function isShortObjectId (value: string): boolean {
  return SHORT_OBJECT_ID.test(value)
}

/**
 * A path inside a tree: relative, slash-separated, without empty, `.` or `..`
 * components. The empty string is the root.
 */
export function checkTreePath (value: string, path: string): string {
  const trimmed = value.replace(/^\/+|\/+$/g, '')
  if (trimmed === '') return ''
  const bad = trimmed.split('/').some((part) => part === '' || part === '.' || part === '..') || /[\x00]/.test(trimmed)
  if (bad) throw gitErrors.invalidPath({ path })
  return trimmed
}

/**
 * Whether a branch or tag name matches a protection pattern (`main`,
 * `release/*`, `hotfix/**`, `v*`): `*` stays within one path component, `**` crosses them. It
 * walks the pattern's positions side by side (no backtracking), so a pattern
 * full of stars costs length × length steps at worst rather than exponential
 * time. Self-contained on purpose: the pre-receive hook embeds its source, so
 * the server and the hook match refs the one same way.
 */
export function matchesRefPattern (pattern: string, name: string): boolean {
  // Tokens: a literal character, 1 for `*`, 2 for `**`.
  const tokens: Array<string | number> = []
  for (let i = 0; i < pattern.length; i++) {
    if (pattern[i] !== '*') tokens.push(pattern[i])
    else if (pattern[i + 1] === '*') { tokens.push(2); i++ } else tokens.push(1)
  }
  // A star may match nothing, so reaching a star's position reaches the position after it too.
  let states: boolean[] = new Array(tokens.length + 1).fill(false)
  states[0] = true
  for (let at = 0; at <= name.length; at++) {
    for (let i = 0; i < tokens.length; i++) if (states[i] && typeof tokens[i] === 'number') states[i + 1] = true
    if (at === name.length) break
    const char = name[at]
    const next: boolean[] = new Array(tokens.length + 1).fill(false)
    for (let i = 0; i < tokens.length; i++) {
      if (!states[i]) continue
      const token = tokens[i]
      if (token === 2 || (token === 1 && char !== '/')) next[i] = true
      else if (token === char) next[i + 1] = true
    }
    states = next
  }
  return states[tokens.length]
}

/** A pattern is a branch or tag name in which `*` may stand for parts of components. */
export function checkRefPattern (pattern: string, path: string, what: 'branch' | 'tag'): string {
  const problem = refNameProblem(pattern.replace(/\*/g, 'x'))
  if (problem !== null || pattern.startsWith('-')) {
    const refusal = what === 'branch' ? gitErrors.invalidBranchPattern : gitErrors.invalidTagPattern
    throw refusal({ problem: problem ?? 'starts with "-"', path })
  }
  return pattern
}
