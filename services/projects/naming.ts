/**
 * Every project's records live in Store collections of its own, named
 * `p_<projectId>_<table>`. Project ids come from the one id generator
 * (lower-case base32, fixed length), so the prefix never collides between
 * projects and a project's collections can be found and dropped together.
 */
export const PROJECT_USERS_TABLE = '_users'

export function projectCollectionPrefix (projectId: string): string {
  return `p_${projectId}_`
}

export function projectCollectionName (projectId: string, table: string): string {
  return `${projectCollectionPrefix(projectId)}${table}`
}
