import t from 'tap'
import { readFileSync } from 'node:fs'
import { Value } from '@sinclair/typebox/value'
import { ConfigError } from '../../../services/platform/config-env.js'
import { ProjectOauthConfig, parseProjectOauthConfig } from '../../../services/projects/oauth-config.js'

t.test('the parser gives what the schema describes; the variable is documented and a bad value names it', async (t) => {
  const env = { PROJECT_OAUTH_ALLOWED_HOSTS: 'Idp.Internal., 127.0.0.1, 10.0.0.0/8' }
  for (const each of [{}, env]) t.ok(Value.Check(ProjectOauthConfig, parseProjectOauthConfig(each)), JSON.stringify(each))
  t.same(parseProjectOauthConfig(env), { allowedHosts: ['idp.internal', '127.0.0.1', '10.0.0.0/8'] })
  t.same(parseProjectOauthConfig({}), { allowedHosts: [] })
  t.equal(ProjectOauthConfig.properties.allowedHosts.variable, 'PROJECT_OAUTH_ALLOWED_HOSTS')
  const readme = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8')
  const table = readme.slice(readme.indexOf('## Configuration'), readme.indexOf('\n## ', readme.indexOf('## Configuration') + 1))
  t.ok(table.includes('`PROJECT_OAUTH_ALLOWED_HOSTS`'), 'in the README\'s configuration table')
  const error = (() => { try { parseProjectOauthConfig({ PROJECT_OAUTH_ALLOWED_HOSTS: 'https://idp.internal' }) } catch (caught) { return caught } })()
  t.ok(error instanceof ConfigError && error.variable === 'PROJECT_OAUTH_ALLOWED_HOSTS', 'a URL is refused, naming the variable')
})
