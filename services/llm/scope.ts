import type { LlmLevel } from '../../schemas/llm.js'

/** Where LLM configuration is held: an organization, or a project (with its organization, which resolution reads too). */
export type LlmScope =
  | { level: 'organization', orgId: string, projectId: null }
  | { level: 'project', orgId: string, projectId: string }

export const organizationScope = (orgId: string): LlmScope => ({ level: 'organization', orgId, projectId: null })
export const projectScope = (orgId: string, projectId: string): LlmScope => ({ level: 'project', orgId, projectId })

/** One string per scope, the key its documents are filed under. */
export function scopeKey (scope: LlmScope): string {
  return scope.level === 'project' ? `project:${scope.projectId}` : `org:${scope.orgId}`
}

export function levelOf (scope: LlmScope): LlmLevel {
  return scope.level
}
