import { Type, type Static } from '@sinclair/typebox'
import { allowedHostList, integer, type Env } from '../platform/config-env.js'

/**
 * End-user email flows' settings (services/projects/email-*.ts,
 * docs/projects.md), each with the variable it is read from, as
 * `loadConfig().projectEmail`. What a project sets itself (its SMTP server,
 * sender, templates) is stored with the project, not here.
 */
export const ProjectEmailConfig = Type.Object({
  allowedHosts: Type.Array(Type.String(), { variable: 'PROJECT_SMTP_ALLOWED_HOSTS', description: 'Host names, *.suffix wildcards, addresses and CIDR ranges a project\'s SMTP server may be at although they are internal (a relay on the private network); every other internal address is refused' }),
  linkTtlSeconds: Type.Integer({ minimum: 60, variable: 'PROJECT_EMAIL_LINK_TTL_MINUTES', description: 'How long a link of a verification, password reset, email change or magic-link mail stays valid' }),
  perAddressLimit: Type.Integer({ minimum: 1, variable: 'PROJECT_EMAIL_PER_ADDRESS_LIMIT', description: 'Requests per hour for one address and flow in a project, whether or not the address has an account' }),
  timeoutMs: Type.Integer({ minimum: 1000, variable: 'PROJECT_SMTP_TIMEOUT_SECONDS', description: 'How long connecting to a project\'s SMTP server and each of its answers may take' })
})
export type ProjectEmailConfig = Static<typeof ProjectEmailConfig>

export function parseProjectEmailConfig (env: Env): ProjectEmailConfig {
  return {
    allowedHosts: allowedHostList(env, 'PROJECT_SMTP_ALLOWED_HOSTS'),
    linkTtlSeconds: integer(env, 'PROJECT_EMAIL_LINK_TTL_MINUTES', 30, 1, 24 * 60) * 60,
    perAddressLimit: integer(env, 'PROJECT_EMAIL_PER_ADDRESS_LIMIT', 5, 1, 1000),
    timeoutMs: integer(env, 'PROJECT_SMTP_TIMEOUT_SECONDS', 20, 1, 300) * 1000
  }
}
