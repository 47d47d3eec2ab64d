import t from 'tap'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { ConfigError, loadConfig, platformHosts } from '../../services/config.js'

const KEY = Buffer.alloc(32, 7).toString('base64')

t.test('defaults', async (t) => {
  const config = loadConfig({})
  t.equal(config.port, 8080)
  t.equal(config.host, '127.0.0.1')
  t.equal(config.dataDir, resolve('./data'))
  t.equal(config.mongodbUrl, null)
  t.equal(config.mongodbDb, 'plinth')
  t.equal(config.mongodbQueryTimeoutMs, 10_000)
  t.equal(config.logLevel, 'info')
  t.equal(config.publicUrl, 'http://127.0.0.1:8080')
  t.equal(config.identity.patPrefix, 'plinthpat')
  t.equal(config.identity.accessTokenTtlSeconds, 900)
  t.same(config.identity.authRateLimit, { max: 10, windowSeconds: 60 })
  t.same(config.identity.sso.providers, [], 'no SSO provider unless configured')
  t.equal(config.identity.sso.redirectUrl, 'http://127.0.0.1:8080/')
  t.same(config.identity.sso.allowedRedirects, [])
  t.same(config.identity.sso.allowedHosts, [])
})

t.test('SSO providers, landing URL and allowed redirects', async (t) => {
  const config = loadConfig({
    PUBLIC_URL: 'https://api.example.com',
    APPLE_CLIENT_ID: 'com.example.web',
    APPLE_CLIENT_SECRET: 'eyJhbGciOiJFUzI1NiJ9.e30.sig',
    GOOGLE_CLIENT_ID: 'g-id',
    GOOGLE_CLIENT_SECRET: ' g-secret ',
    MICROSOFT_CLIENT_ID: 'm-id',
    MICROSOFT_CLIENT_SECRET: 'm-secret',
    MICROSOFT_ISSUER: 'https://login.microsoftonline.com/contoso.onmicrosoft.com/v2.0/',
    SSO_ALLOWED_REDIRECTS: 'https://App.Example.com, http://localhost:5173 ,'
  })
  t.same(config.identity.sso.providers, [
    { name: 'google', clientId: 'g-id', clientSecret: 'g-secret', issuer: 'https://accounts.google.com' },
    { name: 'microsoft', clientId: 'm-id', clientSecret: 'm-secret', issuer: 'https://login.microsoftonline.com/contoso.onmicrosoft.com/v2.0' },
    { name: 'apple', clientId: 'com.example.web', clientSecret: 'eyJhbGciOiJFUzI1NiJ9.e30.sig', issuer: 'https://appleid.apple.com' }
  ], 'a fixed order, default issuers, overrides without a trailing slash')
  t.equal(config.identity.sso.redirectUrl, 'https://api.example.com/', 'the landing URL defaults to PUBLIC_URL/')
  t.same(config.identity.sso.allowedRedirects, ['https://app.example.com', 'http://localhost:5173'])
  t.equal(loadConfig({ SSO_REDIRECT_URL: 'https://app.example.com/sso/' }).identity.sso.redirectUrl, 'https://app.example.com/sso/', 'kept as given')
})

t.test('values from the environment', async (t) => {
  const config = loadConfig({
    PORT: '9000',
    HOST: '0.0.0.0',
    DATA_DIR: '/tmp/x',
    MONGODB_URL: 'mongodb://db:27017',
    MONGODB_DB: 'prod',
    PLINTH_MASTER_KEY: KEY,
    PUBLIC_URL: 'https://api.example.com/',
    LOG_LEVEL: 'warn'
  })
  t.match(config, { port: 9000, host: '0.0.0.0', dataDir: '/tmp/x', mongodbUrl: 'mongodb://db:27017', mongodbDb: 'prod', publicUrl: 'https://api.example.com', logLevel: 'warn' })
  t.equal(loadConfig({ HOST: '0.0.0.0', PORT: '81' }).publicUrl, 'http://127.0.0.1:81', 'wildcard hosts advertise loopback')
  t.equal(loadConfig({ PORT: '  ' }).port, 8080, 'blank means unset')
})

t.test('MongoDB needs the master key from the environment, the embedded store does not', async (t) => {
  t.throws(() => loadConfig({ MONGODB_URL: 'mongodb://db:27017' }), { variable: 'PLINTH_MASTER_KEY', message: /PLINTH_MASTER_KEY must be set when MONGODB_URL is/ })
  t.equal(loadConfig({ MONGODB_URL: 'mongodb://db:27017', PLINTH_MASTER_KEY: KEY }).masterKey, KEY)
  t.equal(loadConfig({}).masterKey, null, 'alone, the embedded store keeps its key file in DATA_DIR')
})

t.test('PLINTH_MASTER_KEY_RETIRED: former keys, each a key', async (t) => {
  t.same(loadConfig({}).retiredMasterKeys, [])
  const hex = 'ab'.repeat(32)
  t.same(loadConfig({ PLINTH_MASTER_KEY_RETIRED: `${KEY}, ${hex}` }).retiredMasterKeys, [KEY, hex])
  t.throws(() => loadConfig({ PLINTH_MASTER_KEY_RETIRED: `${KEY},short` }), { variable: 'PLINTH_MASTER_KEY_RETIRED', message: /former master keys/ })
})

t.test('a bad value names its variable', async (t) => {
  const bad: Array<[Record<string, string>, string]> = [
    [{ PORT: 'eighty' }, 'PORT'],
    [{ PORT: '70000' }, 'PORT'],
    [{ PORT: '-1' }, 'PORT'],
    [{ HOST: 'bad host;rm' }, 'HOST'],
    [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL'],
    [{ MONGODB_URL: 'postgres://x' }, 'MONGODB_URL'],
    [{ MONGODB_URL: 'mongodb://db:27017' }, 'PLINTH_MASTER_KEY'],
    [{ MONGODB_URL: 'mongodb://db:27017', PLINTH_MASTER_KEY: '  ' }, 'PLINTH_MASTER_KEY'],
    [{ MONGODB_DB: 'a/b' }, 'MONGODB_DB'],
    [{ PUBLIC_URL: 'not a url' }, 'PUBLIC_URL'],
    [{ PUBLIC_URL: 'ftp://x' }, 'PUBLIC_URL'],
    [{ BODY_LIMIT: '10' }, 'BODY_LIMIT'],
    [{ MONGODB_QUERY_TIMEOUT_MS: '5' }, 'MONGODB_QUERY_TIMEOUT_MS'],
    [{ PAT_PREFIX: 'Bad_Prefix' }, 'PAT_PREFIX'],
    [{ ACCESS_TOKEN_TTL_SECONDS: '5' }, 'ACCESS_TOKEN_TTL_SECONDS'],
    [{ AUTH_RATE_LIMIT_MAX: '0' }, 'AUTH_RATE_LIMIT_MAX'],
    [{ GOOGLE_CLIENT_ID: 'id-without-secret' }, 'GOOGLE_CLIENT_SECRET'],
    [{ APPLE_CLIENT_SECRET: 'secret-without-id' }, 'APPLE_CLIENT_ID'],
    [{ MICROSOFT_CLIENT_SECRET: 's', MICROSOFT_CLIENT_ID: ' ' }, 'MICROSOFT_CLIENT_ID'],
    [{ MICROSOFT_ISSUER: 'login.microsoftonline.com', MICROSOFT_CLIENT_ID: 'id', MICROSOFT_CLIENT_SECRET: 's' }, 'MICROSOFT_ISSUER'],
    [{ SSO_REDIRECT_URL: 'javascript:alert(1)' }, 'SSO_REDIRECT_URL'],
    [{ SSO_ALLOWED_REDIRECTS: 'https://app.example.com/path' }, 'SSO_ALLOWED_REDIRECTS'],
    [{ SSO_ALLOWED_REDIRECTS: 'app.example.com' }, 'SSO_ALLOWED_REDIRECTS'],
    [{ SSO_ALLOWED_HOSTS: 'https://idp.internal' }, 'SSO_ALLOWED_HOSTS'],
    [{ REQUEST_TIMEOUT_SECONDS: '0' }, 'REQUEST_TIMEOUT_SECONDS'],
    [{ HEADERS_TIMEOUT_SECONDS: '1.5' }, 'HEADERS_TIMEOUT_SECONDS'],
    [{ HEADERS_TIMEOUT_SECONDS: '30', REQUEST_TIMEOUT_SECONDS: '10' }, 'HEADERS_TIMEOUT_SECONDS'],
    [{ CONNECTION_TIMEOUT_SECONDS: 'soon' }, 'CONNECTION_TIMEOUT_SECONDS'],
    [{ KEEP_ALIVE_TIMEOUT_SECONDS: '0' }, 'KEEP_ALIVE_TIMEOUT_SECONDS'],
    [{ TRUST_PROXY: 'true' }, 'TRUST_PROXY'],
    [{ TRUST_PROXY: '0' }, 'TRUST_PROXY'],
    [{ TRUST_PROXY: '10.0.0.0/33' }, 'TRUST_PROXY'],
    [{ TRUST_PROXY: '10.0.0.1, proxy.internal' }, 'TRUST_PROXY'],
    [{ TRUST_PROXY: '::1/129' }, 'TRUST_PROXY'],
    [{ CORS_ORIGINS: 'https://app.example.com/path' }, 'CORS_ORIGINS'],
    [{ CORS_ORIGINS: '*, https://app.example.com' }, 'CORS_ORIGINS'],
    [{ CORS_ORIGINS: 'chrome-extension://abc' }, 'CORS_ORIGINS'],
    [{ GIT_HOSTING_ENABLED: 'maybe' }, 'GIT_HOSTING_ENABLED'],
    [{ GIT_SSH_PORT: '70000' }, 'GIT_SSH_PORT'],
    [{ DNS_PORT: '53a' }, 'DNS_PORT'],
    [{ DNS_PORT: '65536' }, 'DNS_PORT'],
    [{ DNS_HOST: 'localhost' }, 'DNS_HOST'],
    [{ DNS_NAMESERVERS: 'ns1.example.com,bad name' }, 'DNS_NAMESERVERS'],
    [{ DNS_NAMESERVERS: ' , ' }, 'DNS_NAMESERVERS'],
    [{ DNS_AXFR_ALLOW: '10.0.0.0/8' }, 'DNS_AXFR_ALLOW'],
    [{ DNS_GATEWAY_HOST: 'http://gw.example.com' }, 'DNS_GATEWAY_HOST'],
    [{ DNS_GATEWAY_IPV4: '2001:db8::1' }, 'DNS_GATEWAY_IPV4'],
    [{ DNS_GATEWAY_IPV6: '192.0.2.1' }, 'DNS_GATEWAY_IPV6'],
    [{ HOSTING_ENABLED: 'perhaps' }, 'HOSTING_ENABLED'],
    [{ HOSTING_STOP_APPS_ON_EXIT: 'always' }, 'HOSTING_STOP_APPS_ON_EXIT'],
    [{ HOSTING_DRIVER: 'vm' }, 'HOSTING_DRIVER'],
    [{ HOSTING_DRIVER: 'container', HOSTING_BASE_IMAGE: 'node:20-slim' }, 'HOSTING_DOCKER_SOCKET'],
    [{ HOSTING_DRIVER: 'container', HOSTING_DOCKER_SOCKET: '/run/podman.sock' }, 'HOSTING_BASE_IMAGE'],
    [{ HOSTING_DOCKER_SOCKET: 'podman.sock' }, 'HOSTING_DOCKER_SOCKET'],
    [{ HOSTING_APPS_DOMAIN: 'not a domain' }, 'HOSTING_APPS_DOMAIN'],
    [{ GATEWAY_HOST: 'a host' }, 'GATEWAY_HOST'],
    [{ GATEWAY_PORT: '70000' }, 'GATEWAY_PORT'],
    [{ GATEWAY_PORT: 'none' }, 'GATEWAY_PORT'],
    [{ GATEWAY_PORT: '8080' }, 'GATEWAY_PORT'],
    [{ PORT: '8000' }, 'GATEWAY_PORT'],
    [{ GATEWAY_PORT: 'off', GATEWAY_TLS_PORT: '8443' }, 'GATEWAY_TLS_PORT'],
    [{ GATEWAY_TLS_PORT: '8000' }, 'GATEWAY_TLS_PORT'],
    [{ GATEWAY_PORT: '9000', GATEWAY_TLS_PORT: '8080' }, 'GATEWAY_TLS_PORT'],
    [{ GATEWAY_TLS_PORT: 'x' }, 'GATEWAY_TLS_PORT'],
    [{ HOSTING_INSTANCE_CPUS: '0' }, 'HOSTING_INSTANCE_CPUS'],
    [{ HOSTING_INSTANCE_MEMORY_MB: '1' }, 'HOSTING_INSTANCE_MEMORY_MB'],
    [{ HOSTING_HEALTH_TIMEOUT_SECONDS: '0' }, 'HOSTING_HEALTH_TIMEOUT_SECONDS']
  ]
  t.match(loadConfig({ DATA_DIR: '/srv/plinth' }).hosting, { enabled: true, driver: 'process', dir: '/srv/plinth/hosting', appsDomain: 'apps.localhost', gateway: { port: 8000, tlsPort: null, host: '127.0.0.1', connections: { maxConnections: 10_000, maxConnectionsPerAddress: 256 } }, instanceLimits: { memoryMb: 512, cpus: 1, pids: 256 }, healthTimeoutMs: 60_000, stopGraceMs: 10_000, stopAppsOnExit: false, container: null }, 'hosting on, the gateway on its default port')
  t.equal(loadConfig({ HOSTING_STOP_APPS_ON_EXIT: 'true' }).hosting.stopAppsOnExit, true)
  t.same([' off ', 'OFF'].map((off) => loadConfig({ GATEWAY_PORT: off }).hosting.gateway.port), [null, null], 'off: no gateway')
  t.same(['0', '', '9000'].map((port) => loadConfig({ GATEWAY_PORT: port }).hosting.gateway.port), [0, 8000, 9000], '0 picks a free port; empty is unset')
  t.same([loadConfig({ HOSTING_ENABLED: 'false' }).hosting.gateway, loadConfig({ HOSTING_ENABLED: 'false', GATEWAY_TLS_PORT: '8443' }).hosting.gateway.port], [{ port: null, tlsPort: null, host: '127.0.0.1', connections: { maxConnections: 10_000, maxConnectionsPerAddress: 256 } }, null], 'hosting off: no gateway unless GATEWAY_PORT says so')
  t.equal(loadConfig({ PORT: '8000', GATEWAY_PORT: '8001' }).hosting.gateway.port, 8001)
  t.equal(loadConfig({ PORT: '0', GATEWAY_PORT: '0', GATEWAY_TLS_PORT: '0' }).hosting.gateway.tlsPort, 0, 'free ports never collide')
  t.match(loadConfig({ HOSTING_DRIVER: 'container', HOSTING_DOCKER_SOCKET: '/run/podman.sock', HOSTING_BASE_IMAGE: 'node:20-slim', HOSTING_APPS_DOMAIN: 'Apps.Example.com.', GATEWAY_PORT: '8000', GATEWAY_TLS_PORT: '8443', GATEWAY_HOST: '0.0.0.0', HOSTING_INSTANCE_CPUS: '0.5' }).hosting, { driver: 'container', container: { socketPath: '/run/podman.sock', baseImage: 'node:20-slim' }, appsDomain: 'apps.example.com', gateway: { port: 8000, tlsPort: 8443, host: '0.0.0.0' }, instanceLimits: { cpus: 0.5 } })
  t.same(loadConfig({}).dns, { port: null, host: '127.0.0.1', nameservers: ['ns1.plinth.localhost', 'ns2.plinth.localhost'], axfrAllow: [], gateway: { host: null, ipv4: [], ipv6: [] }, providerPrivateHosts: [], rateLimit: { responsesPerSecond: 50, slip: 2, ipv4Prefix: 24, ipv6Prefix: 56, exempt: [] } }, 'the DNS server is off unless DNS_PORT is set; response-rate limiting is on')
  t.same(loadConfig({ DNS_PORT: '5353', DNS_HOST: '::', DNS_NAMESERVERS: 'NS1.Example.com., ns2.example.net', DNS_AXFR_ALLOW: '192.0.2.9, ::1', DNS_GATEWAY_HOST: 'GW.example.net.', DNS_GATEWAY_IPV4: '192.0.2.80', DNS_GATEWAY_IPV6: '2001:db8::80', DNS_PROVIDER_PRIVATE_HOSTS: '10.0.0.5, PDNS.internal,[::1]' }).dns, {
    port: 5353, host: '::', nameservers: ['ns1.example.com', 'ns2.example.net'], axfrAllow: ['192.0.2.9', '::1'], gateway: { host: 'gw.example.net', ipv4: ['192.0.2.80'], ipv6: ['2001:db8::80'] }, providerPrivateHosts: ['10.0.0.5', 'pdns.internal', '::1'], rateLimit: { responsesPerSecond: 50, slip: 2, ipv4Prefix: 24, ipv6Prefix: 56, exempt: [] }
  })
  for (const [env, variable] of bad) {
    const error = (() => { try { loadConfig(env) } catch (caught) { return caught } })()
    t.ok(error instanceof ConfigError, `${variable}=${Object.values(env)[0]} is refused`)
    t.equal((error as ConfigError).variable, variable)
    t.match((error as ConfigError).message, new RegExp(`^Invalid configuration: ${variable} `))
  }
})

t.test('timeouts, trusted proxies and CORS origins', async (t) => {
  const defaults = loadConfig({})
  t.same(defaults.timeouts, { connectionSeconds: 60, requestSeconds: 300, headersSeconds: 20, keepAliveSeconds: 72 })
  t.equal(defaults.trustProxy, false, 'no proxy is trusted unless configured')
  t.same(defaults.corsOrigins, [], 'no browser origin is allowed unless configured')

  const config = loadConfig({
    CONNECTION_TIMEOUT_SECONDS: '30',
    REQUEST_TIMEOUT_SECONDS: '600',
    HEADERS_TIMEOUT_SECONDS: '10',
    KEEP_ALIVE_TIMEOUT_SECONDS: '65',
    TRUST_PROXY: ' 10.0.0.0/8, 192.168.1.7 ,::1, fd00::/8 ',
    CORS_ORIGINS: 'https://Console.Example.com, http://localhost:5173'
  })
  t.same(config.timeouts, { connectionSeconds: 30, requestSeconds: 600, headersSeconds: 10, keepAliveSeconds: 65 })
  t.same(config.trustProxy, ['10.0.0.0/8', '192.168.1.7', '::1', 'fd00::/8'])
  t.same(config.corsOrigins, ['https://console.example.com', 'http://localhost:5173'], 'origins as browsers send them')
  t.equal(loadConfig({ TRUST_PROXY: '2' }).trustProxy, 2, 'a hop count')
  t.same(loadConfig({ CORS_ORIGINS: ' * ' }).corsOrigins, ['*'])
})

t.test('git hosting: on by default, repositories under DATA_DIR unless placed elsewhere', async (t) => {
  const defaults = loadConfig({ DATA_DIR: '/srv/plinth' })
  const sshLimits = { maxConnections: 512, maxConnectionsPerAddress: 32, authTimeoutSeconds: 30, maxAuthAttempts: 6, idleTimeoutSeconds: 300 }
  t.same(defaults.git, { enabled: true, reposDir: '/srv/plinth/git', sshPort: null, sshLimits })
  t.same(loadConfig({ DATA_DIR: '/srv/plinth', GIT_HOSTING_ENABLED: 'off', GIT_REPOS_DIR: 'repos', GIT_SSH_PORT: '2222' }).git, { enabled: false, reposDir: '/srv/plinth/repos', sshPort: 2222, sshLimits })
  t.equal(loadConfig({ GIT_HOSTING_ENABLED: 'TRUE', GIT_REPOS_DIR: '/var/git' }).git.reposDir, '/var/git')
})

t.test('the repositories\' and the hosting\'s folders are each their own: not one, not nested, not DATA_DIR', async (t) => {
  const refused: Array<[string, Record<string, string>, RegExp]> = [
    ['one folder', { GIT_REPOS_DIR: '/srv/shared', HOSTING_DIR: '/srv/shared' }, /HOSTING_DIR must not be GIT_REPOS_DIR/],
    ['hosting inside the repositories', { GIT_REPOS_DIR: '/srv/git', HOSTING_DIR: '/srv/git/apps' }, /HOSTING_DIR/],
    ['the repositories inside hosting', { GIT_REPOS_DIR: 'hosting/git' }, /HOSTING_DIR/],
    ['the repositories in DATA_DIR itself', { GIT_REPOS_DIR: '.' }, /GIT_REPOS_DIR must not be DATA_DIR itself/],
    ['hosting in DATA_DIR itself', { HOSTING_DIR: '/srv/plinth' }, /HOSTING_DIR must not be DATA_DIR itself/],
    ['backups in DATA_DIR itself', { BACKUP_DIR: '/srv/plinth' }, /BACKUP_DIR must not be DATA_DIR itself/],
    ['backups among the repositories', { BACKUP_DIR: 'git/backups' }, /BACKUP_DIR must not be GIT_REPOS_DIR/],
    ['backups holding the hosting', { HOSTING_DIR: '/srv/b/apps', BACKUP_DIR: '/srv/b' }, /BACKUP_DIR must not be HOSTING_DIR/]
  ]
  for (const [name, env, message] of refused) {
    t.throws(() => loadConfig({ DATA_DIR: '/srv/plinth', ...env }), { name: 'ConfigError', message }, name)
  }
  const apart = loadConfig({ DATA_DIR: '/srv/plinth', GIT_REPOS_DIR: '/srv/git', HOSTING_DIR: '/srv/git-apps' })
  t.same([apart.git.reposDir, apart.hosting.dir], ['/srv/git', '/srv/git-apps'], 'a name that only starts like the other is apart')
  t.equal(apart.backup.dir, '/srv/plinth/backups', 'backups under DATA_DIR by default, left out of each backup')
})

t.test('hostnames and certificates: ACME off unless a directory is set, resolvers as addresses', async (t) => {
  t.same(loadConfig({}).hostingTls, { acmeDirectoryUrl: null, acmeEmail: null, acmeCaCertificates: null, dnsResolvers: [] })
  const dir = mkdtempSync(join(tmpdir(), 'plinth-config-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const caFile = join(dir, 'ca.pem')
  writeFileSync(caFile, '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n')
  writeFileSync(join(dir, 'not-pem.txt'), 'hello')
  t.same(loadConfig({
    HOSTING_ACME_DIRECTORY_URL: 'https://acme.example.net/directory',
    HOSTING_ACME_EMAIL: 'ops@example.com',
    HOSTING_ACME_CA_FILE: caFile,
    HOSTING_DNS_RESOLVERS: '192.0.2.53, 127.0.0.1:5353, 2001:db8::53, [2001:db8::54]:53'
  }).hostingTls, {
    acmeDirectoryUrl: 'https://acme.example.net/directory',
    acmeEmail: 'ops@example.com',
    acmeCaCertificates: '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n',
    dnsResolvers: ['192.0.2.53', '127.0.0.1:5353', '2001:db8::53', '[2001:db8::54]:53']
  })
  const bad: Array<[Record<string, string>, string]> = [
    [{ HOSTING_ACME_DIRECTORY_URL: 'ftp://acme.example.net/dir' }, 'HOSTING_ACME_DIRECTORY_URL'],
    [{ HOSTING_ACME_EMAIL: 'not-an-address' }, 'HOSTING_ACME_EMAIL'],
    [{ HOSTING_ACME_CA_FILE: join(dir, 'missing.pem') }, 'HOSTING_ACME_CA_FILE'],
    [{ HOSTING_ACME_CA_FILE: join(dir, 'not-pem.txt') }, 'HOSTING_ACME_CA_FILE'],
    [{ HOSTING_DNS_RESOLVERS: 'dns.example.com' }, 'HOSTING_DNS_RESOLVERS'],
    [{ HOSTING_DNS_RESOLVERS: '127.0.0.1:99999' }, 'HOSTING_DNS_RESOLVERS'],
    [{ HOSTING_DNS_RESOLVERS: '[192.0.2.1' }, 'HOSTING_DNS_RESOLVERS']
  ]
  for (const [env, variable] of bad) {
    t.throws(() => loadConfig(env), { name: 'ConfigError', variable }, `${Object.values(env)[0]}`)
  }
})

t.test('external git sources: the operator\'s allow-list of internal hosts and ranges, and a CA file', async (t) => {
  t.same(loadConfig({}).hosting.externalGit, { allowedHosts: [], caFile: null }, 'nothing internal is allowed by default')
  const dir = mkdtempSync(join(tmpdir(), 'plinth-config-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const caFile = join(dir, 'ca.pem')
  writeFileSync(caFile, '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n')
  writeFileSync(join(dir, 'not-pem.txt'), 'hello')
  t.same(loadConfig({ HOSTING_GIT_ALLOWED_HOSTS: ' Git.Internal., gitea, *.corp.example, 10.0.0.0/8, 192.168.1.20, [fd00::5], fc00::/7 ', HOSTING_GIT_CA_FILE: caFile }).hosting.externalGit, {
    allowedHosts: ['git.internal', 'gitea', '*.corp.example', '10.0.0.0/8', '192.168.1.20', 'fd00::5', 'fc00::/7'],
    caFile
  })
  const bad: Array<[Record<string, string>, string]> = [
    [{ HOSTING_GIT_ALLOWED_HOSTS: 'git.internal, not a host' }, 'HOSTING_GIT_ALLOWED_HOSTS'],
    [{ HOSTING_GIT_ALLOWED_HOSTS: '10.0.0.0/33' }, 'HOSTING_GIT_ALLOWED_HOSTS'],
    [{ HOSTING_GIT_ALLOWED_HOSTS: '*.com' }, 'HOSTING_GIT_ALLOWED_HOSTS'],
    [{ HOSTING_GIT_ALLOWED_HOSTS: '*' }, 'HOSTING_GIT_ALLOWED_HOSTS'],
    [{ HOSTING_GIT_ALLOWED_HOSTS: 'https://git.internal' }, 'HOSTING_GIT_ALLOWED_HOSTS'],
    [{ HOSTING_GIT_CA_FILE: join(dir, 'missing.pem') }, 'HOSTING_GIT_CA_FILE'],
    [{ HOSTING_GIT_CA_FILE: join(dir, 'not-pem.txt') }, 'HOSTING_GIT_CA_FILE']
  ]
  for (const [env, variable] of bad) {
    t.throws(() => loadConfig(env), { name: 'ConfigError', variable }, `${Object.values(env)[0]}`)
  }
})

t.test('what apps may reach of the internal network: IPv4 addresses and ranges, never inside the links to instances or slirp\'s network', async (t) => {
  t.same(loadConfig({}).hosting.appAllowedRanges, [], 'nothing internal by default')
  t.same(loadConfig({ HOSTING_APP_ALLOWED_RANGES: ' 10.1.2.3, 10.20.0.0/16 ,192.168.7.9/24, 10.0.0.0/8' }).hosting.appAllowedRanges, [
    { network: '10.1.2.3', prefix: 32 }, { network: '10.20.0.0', prefix: 16 }, { network: '192.168.7.0', prefix: 24 }, { network: '10.0.0.0', prefix: 8 }
  ])
  const bad: Array<[string, RegExp]> = [
    ['db.internal', /IPv4 addresses and CIDR ranges/],
    ['fd00::/8', /apps have no IPv6 route/],
    ['10.0.0.0/33', /got "10\.0\.0\.0\/33"/],
    ['169.254.3.0/24', /the links between the gateway and instances, which stay refused/],
    ['10.0.2.3', /the user-mode network instances reach the internet through, which stays refused/]
  ]
  for (const [value, message] of bad) {
    t.throws(() => loadConfig({ HOSTING_APP_ALLOWED_RANGES: value }), { name: 'ConfigError', variable: 'HOSTING_APP_ALLOWED_RANGES', message }, value)
  }
})

t.test('git over SSH: the caps on connections, sign-in and idleness, validated', async (t) => {
  const limits = loadConfig({
    GIT_SSH_MAX_CONNECTIONS: '100',
    GIT_SSH_MAX_CONNECTIONS_PER_ADDRESS: '10',
    GIT_SSH_AUTH_TIMEOUT_SECONDS: '20',
    GIT_SSH_MAX_AUTH_ATTEMPTS: '3',
    GIT_SSH_IDLE_TIMEOUT_SECONDS: '60'
  }).git.sshLimits
  t.same(limits, { maxConnections: 100, maxConnectionsPerAddress: 10, authTimeoutSeconds: 20, maxAuthAttempts: 3, idleTimeoutSeconds: 60 })
  const refusals: Array<[Record<string, string>, RegExp]> = [
    [{ GIT_SSH_MAX_CONNECTIONS: '0' }, /GIT_SSH_MAX_CONNECTIONS must be between 1/],
    [{ GIT_SSH_MAX_CONNECTIONS: '4', GIT_SSH_MAX_CONNECTIONS_PER_ADDRESS: '5' }, /GIT_SSH_MAX_CONNECTIONS_PER_ADDRESS must not exceed GIT_SSH_MAX_CONNECTIONS \(4\)/],
    [{ GIT_SSH_AUTH_TIMEOUT_SECONDS: 'soon' }, /GIT_SSH_AUTH_TIMEOUT_SECONDS must be a whole number/],
    [{ GIT_SSH_MAX_AUTH_ATTEMPTS: '101' }, /GIT_SSH_MAX_AUTH_ATTEMPTS must be between 1 and 100/],
    [{ GIT_SSH_IDLE_TIMEOUT_SECONDS: '0' }, /GIT_SSH_IDLE_TIMEOUT_SECONDS must be between 1/]
  ]
  for (const [env, message] of refusals) t.throws(() => loadConfig(env), message, JSON.stringify(env))
})

t.test('the gateway\'s caps on client connections, validated', async (t) => {
  t.same(loadConfig({ GATEWAY_MAX_CONNECTIONS: '500', GATEWAY_MAX_CONNECTIONS_PER_ADDRESS: '20' }).hosting.gateway.connections, { maxConnections: 500, maxConnectionsPerAddress: 20 })
  const refusals: Array<[Record<string, string>, RegExp]> = [
    [{ GATEWAY_MAX_CONNECTIONS: '0' }, /GATEWAY_MAX_CONNECTIONS must be between 1/],
    [{ GATEWAY_MAX_CONNECTIONS: 'many' }, /GATEWAY_MAX_CONNECTIONS must be a whole number/],
    [{ GATEWAY_MAX_CONNECTIONS_PER_ADDRESS: '0' }, /GATEWAY_MAX_CONNECTIONS_PER_ADDRESS must be between 1/],
    [{ GATEWAY_MAX_CONNECTIONS: '100', GATEWAY_MAX_CONNECTIONS_PER_ADDRESS: '101' }, /GATEWAY_MAX_CONNECTIONS_PER_ADDRESS must not exceed GATEWAY_MAX_CONNECTIONS \(100\)/]
  ]
  for (const [env, message] of refusals) t.throws(() => loadConfig(env), message, JSON.stringify(env))
})

t.test('the platform\'s own names: nameservers, the gateway, the public host unless an address, the apps domain', async (t) => {
  t.same(platformHosts(loadConfig({})), ['ns1.plinth.localhost', 'ns2.plinth.localhost', 'apps.localhost'])
  t.same(platformHosts(loadConfig({
    DNS_NAMESERVERS: 'ns.dns.example',
    DNS_GATEWAY_HOST: 'gw.example.net',
    PUBLIC_URL: 'https://API.example.com',
    HOSTING_APPS_DOMAIN: 'run.example.net'
  })), ['ns.dns.example', 'gw.example.net', 'api.example.com', 'run.example.net'])
  t.same(platformHosts(loadConfig({ PUBLIC_URL: 'http://[::1]:8080' })), ['ns1.plinth.localhost', 'ns2.plinth.localhost', 'apps.localhost'], 'an IPv6 address is no name either')
})

t.test('build limits, log limits and the job lanes: defaults, values, refusals', async (t) => {
  const defaults = loadConfig({})
  t.match(defaults.hosting, { buildTimeoutMs: 900_000, buildsPerProject: 1, logs: { linesPerSecond: 500, bufferLines: 2000, retentionLines: 10_000, retentionMs: 14 * 86_400_000 } })
  t.same(defaults.jobs, { slots: 2, longSlots: 2 })
  const set = loadConfig({ HOSTING_BUILD_TIMEOUT_SECONDS: '60', HOSTING_BUILDS_PER_PROJECT: '3', HOSTING_LOG_LINES_PER_SECOND: '50', HOSTING_LOG_BUFFER_LINES: '100', HOSTING_LOG_RETENTION_LINES: '1000', HOSTING_LOG_RETENTION_DAYS: '1', JOB_WORKER_SLOTS: '4', JOB_WORKER_LONG_SLOTS: '1' })
  t.match(set.hosting, { buildTimeoutMs: 60_000, buildsPerProject: 3, logs: { linesPerSecond: 50, bufferLines: 100, retentionLines: 1000, retentionMs: 86_400_000 } })
  t.same(set.jobs, { slots: 4, longSlots: 1 })
  const refusals: Array<[Record<string, string>, RegExp]> = [
    [{ HOSTING_BUILD_TIMEOUT_SECONDS: '0' }, /HOSTING_BUILD_TIMEOUT_SECONDS must be between 1 and 86400/],
    [{ HOSTING_BUILDS_PER_PROJECT: 'many' }, /HOSTING_BUILDS_PER_PROJECT must be a whole number/],
    [{ HOSTING_LOG_LINES_PER_SECOND: '0' }, /HOSTING_LOG_LINES_PER_SECOND must be between 1/],
    [{ HOSTING_LOG_BUFFER_LINES: '5' }, /HOSTING_LOG_BUFFER_LINES must be between 10/],
    [{ HOSTING_LOG_RETENTION_LINES: '-1' }, /HOSTING_LOG_RETENTION_LINES must be a whole number/],
    [{ HOSTING_LOG_RETENTION_DAYS: '0' }, /HOSTING_LOG_RETENTION_DAYS must be between 1/],
    [{ JOB_WORKER_SLOTS: '0' }, /JOB_WORKER_SLOTS must be between 1 and 256/],
    [{ JOB_WORKER_LONG_SLOTS: '1.5' }, /JOB_WORKER_LONG_SLOTS must be a whole number/]
  ]
  for (const [env, message] of refusals) t.throws(() => loadConfig(env), message, JSON.stringify(env))
})
