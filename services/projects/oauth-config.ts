import { Type, type Static } from '@sinclair/typebox'
import { allowedHostList, type Env } from '../platform/config-env.js'

/**
 * End-user OAuth/OIDC sign-in's settings (services/projects/oauth-*.ts,
 * docs/projects.md), as `loadConfig().projectOauth`. The providers
 * themselves are each project's own, stored with it.
 */
export const ProjectOauthConfig = Type.Object({
  allowedHosts: Type.Array(Type.String(), { variable: 'PROJECT_OAUTH_ALLOWED_HOSTS', description: 'Host names, *.suffix wildcards, addresses and CIDR ranges a project\'s OpenID provider may be at although they are internal (an identity provider on the private network); every other internal address is refused' })
})
export type ProjectOauthConfig = Static<typeof ProjectOauthConfig>

export function parseProjectOauthConfig (env: Env): ProjectOauthConfig {
  return { allowedHosts: allowedHostList(env, 'PROJECT_OAUTH_ALLOWED_HOSTS') }
}
