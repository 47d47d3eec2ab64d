import { Type, type Static } from '@sinclair/typebox'
import { integer, type Env } from '../platform/config-env.js'

/**
 * The audit log's settings (docs/audit.md), each with the variable it is read
 * from, as `loadConfig().audit`.
 */
export const AuditConfig = Type.Object({
  retentionDays: Type.Integer({ minimum: 1, variable: 'AUDIT_RETENTION_DAYS', description: 'How long an audit entry is kept; the daily prune deletes older ones' })
})
export type AuditConfig = Static<typeof AuditConfig>

export function parseAuditConfig (env: Env): AuditConfig {
  return { retentionDays: integer(env, 'AUDIT_RETENTION_DAYS', 365, 1, 36_500) }
}
