import t from 'tap'
import { join } from 'node:path'
import { AppError } from '../../../services/platform/errors.js'
import { ExternalGitGuard, systemResolveAll, type ResolveAll } from '../../../services/hosting/external-git.js'
import { checkExternalUrl, cloneExternal, SourceError } from '../../../services/hosting/sources.js'
import { GitCli } from '../../../services/git/git-cli.js'
import { tempDir } from '../../helper.js'
import { httpsGit } from '../../routes/hosting/https-git.js'

/** A resolver that knows only `answers`; any other name does not resolve. */
function resolver (answers: Record<string, string[]>): ResolveAll & { asked: string[] } {
  const asked: string[] = []
  return Object.assign(async (host: string) => {
    asked.push(host)
    const found = answers[host]
    if (found === undefined) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' })
    return found
  }, { asked })
}

const answers = {
  'public.example': ['93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c'],
  'mixed.example': ['93.184.215.14', '10.0.0.7'],
  'metadata.example': ['169.254.169.254'],
  'mapped.example': ['::ffff:127.0.0.1'],
  'nat64.example': ['64:ff9b::a9fe:a9fe'],
  'ula.example': ['fd00::5'],
  'cgnat.example': ['100.64.1.2'],
  'git.internal': ['10.1.2.3'],
  'build.corp.example': ['172.20.0.4'],
  'corp.example.evil.example': ['172.20.0.5'],
  'empty.example': []
}

async function refusal (guard: ExternalGitGuard, raw: string): Promise<string | null> {
  try {
    await guard.checkOnSet(checkExternalUrl(raw))
    return null
  } catch (error) {
    if (!(error instanceof AppError)) throw error
    return `${error.status} ${error.code} ${error.message}`
  }
}

t.test('at set time: every internal address a URL reaches is refused, whatever form the URL writes it in', async (t) => {
  const guard = new ExternalGitGuard({ allowedHosts: [], caFile: null, resolveAll: resolver(answers) })
  const refused: Array<[string, string]> = [
    ['https://127.0.0.1/x.git', 'loopback'],
    ['https://2130706433/x.git', 'loopback'],
    ['https://0x7f.1/x.git', 'loopback'],
    ['https://017700000001/x.git', 'loopback'],
    ['https://127.1:8443/x.git', 'loopback'],
    ['https://[::1]/x.git', 'loopback'],
    ['https://[::ffff:127.0.0.1]/x.git', 'loopback'],
    ['https://[0:0:0:0:0:ffff:7f00:1]/x.git', 'loopback'],
    ['https://0.0.0.0/x.git', 'unspecified'],
    ['https://[::]/x.git', 'unspecified'],
    ['https://169.254.169.254/latest/meta-data/', 'link-local'],
    ['https://[fe80::1]/x.git', 'link-local'],
    ['https://10.0.0.1/x.git', 'private'],
    ['https://172.16.5.4/x.git', 'private'],
    ['https://192.168.0.1/x.git', 'private'],
    ['https://100.64.0.1/x.git', 'carrier-grade NAT'],
    ['https://[fd00::1]/x.git', 'unique-local'],
    ['https://224.0.0.1/x.git', 'multicast'],
    ['https://mixed.example/x.git', 'private'],
    ['https://metadata.example/x.git', 'link-local'],
    ['https://mapped.example/x.git', 'loopback'],
    ['https://nat64.example/x.git', 'link-local'],
    ['https://ula.example/x.git', 'unique-local'],
    ['https://cgnat.example/x.git', 'carrier-grade NAT'],
    ['https://git.internal./x.git', 'private']
  ]
  for (const [url, kind] of refused) {
    const answer = await refusal(guard, url)
    t.match(answer, new RegExp(`^400 APP_HOSTING_GIT_SOURCE_FORBIDDEN .*reaches an? ${kind} address.*HOSTING_GIT_ALLOWED_HOSTS$`), url)
    t.notMatch(answer, /10\.0\.0\.7|169\.254\.169\.254 |127\.0\.0\.1/, 'the address it resolved to is not echoed')
  }
  t.equal(await refusal(guard, 'https://public.example/x.git'), null, 'a host that resolves to public addresses only')
  t.equal(await refusal(guard, 'https://93.184.215.14/x.git'), null, 'a public address')
  t.equal(await refusal(guard, 'https://nowhere.invalid/x.git'), null, 'a name that resolves nowhere is left to the clone, which checks again')
  t.equal(await refusal(guard, 'https://empty.example/x.git'), null)
})

t.test('the operator\'s allow-list opens host names, wildcards and ranges, and nothing else', async (t) => {
  const guard = new ExternalGitGuard({ allowedHosts: ['git.internal', '*.corp.example', '127.0.0.1', 'fd00::/8', '169.254.0.0/16'], caFile: null, resolveAll: resolver(answers) })
  for (const url of ['https://git.internal/x.git', 'https://GIT.internal./x.git', 'https://build.corp.example/x.git', 'https://127.0.0.1:8443/x.git', 'https://2130706433/x.git', 'https://ula.example/x.git', 'https://[fd00::1]/x.git', 'https://nat64.example/x.git', 'https://metadata.example/x.git']) {
    t.equal(await refusal(guard, url), null, url)
  }
  for (const url of ['https://127.0.0.2/x.git', 'https://[::1]/x.git', 'https://mixed.example/x.git', 'https://corp.example.evil.example/x.git', 'https://10.1.2.3/x.git']) {
    t.match(await refusal(guard, url), /^400 APP_HOSTING_GIT_SOURCE_FORBIDDEN/, url)
  }
})

t.test('at clone time: refused or unresolvable hosts fail the deployment; the checked addresses are pinned and redirects are off', async (t) => {
  const lookups = resolver(answers)
  const guard = new ExternalGitGuard({ allowedHosts: ['git.internal'], caFile: '/etc/plinth/git-ca.pem', resolveAll: lookups })
  await t.rejects(guard.checkOnClone('https://nowhere.invalid/x.git'), new SourceError('The git source\'s host nowhere.invalid does not resolve'))
  await t.rejects(guard.checkOnClone('https://empty.example/x.git'), SourceError)
  await t.rejects(guard.checkOnClone('https://metadata.example/x.git'), { name: 'SourceError', message: /reaches a link-local address/ })
  const remote = await guard.checkOnClone('https://public.example/x.git')
  t.same(remote, { url: 'https://public.example/x.git', host: 'public.example', port: 443, addresses: answers['public.example'] })
  t.same(guard.cloneOptions(remote), ['-c', 'http.followRedirects=false', '-c', 'http.curloptResolve=public.example:443:93.184.215.14,[2606:2800:21f:cb07:6820:80da:af6b:8b2c]', '-c', 'http.sslCAInfo=/etc/plinth/git-ca.pem'])
  const internal = await guard.checkOnClone('https://git.internal:8443/x.git')
  t.same(guard.cloneOptions(internal), ['-c', 'http.followRedirects=false', '-c', 'http.curloptResolve=git.internal:8443:10.1.2.3', '-c', 'http.sslCAInfo=/etc/plinth/git-ca.pem'])
  const literal = await guard.checkOnClone('https://93.184.215.14/x.git')
  t.same(new ExternalGitGuard({ allowedHosts: [], caFile: null }).cloneOptions(literal), ['-c', 'http.followRedirects=false'], 'an address is not resolved, so there is nothing to pin')
  t.equal(lookups.asked.includes('93.184.215.14'), false)
  t.match(await refusal(new ExternalGitGuard({ allowedHosts: ['::1'], caFile: null }), 'https://localhost/x.git'), /^400 APP_HOSTING_GIT_SOURCE_FORBIDDEN .*loopback/, 'the system resolver by default; ::1 allowed alone leaves 127.0.0.1 refused')
  t.same(await systemResolveAll('localhost').then((list) => list.every((address) => ['127.0.0.1', '::1'].includes(address))), true, 'the system resolver reads the hosts file')
})

t.test('a real clone over HTTPS goes to the checked address, whatever the system resolver says', async (t) => {
  const server = await httpsGit(t, { 'index.html': '<h1>pinned</h1>\n' })
  const env = new GitCli().env()
  const dir = tempDir(t, 'plinth-external-clone-')
  // A name the system cannot resolve: only the pin makes the clone reach the server.
  const guard = new ExternalGitGuard({ allowedHosts: ['git.plinth.test'], caFile: server.caFile, resolveAll: resolver({ 'git.plinth.test': ['127.0.0.1'] }) })
  const remote = await guard.checkOnClone(`https://git.plinth.test:${server.port}/site.git`)
  t.match(await cloneExternal(remote.url, 'main', join(dir, 'one.git'), env, guard.cloneOptions(remote)), /^[0-9a-f]{40}$/)
  t.ok(server.seen.length > 0)

  // Rebinding: the check saw 127.0.0.2 (allowed), the system would say 127.0.0.1 where the server listens; the clone goes to the former.
  const before = server.seen.length
  const rebound = new ExternalGitGuard({ allowedHosts: ['127.0.0.2/32'], caFile: server.caFile, resolveAll: resolver({ localhost: ['127.0.0.2'] }) })
  const pinned = await rebound.checkOnClone(`https://localhost:${server.port}/site.git`)
  await t.rejects(cloneExternal(pinned.url, 'main', join(dir, 'two.git'), env, rebound.cloneOptions(pinned)), { name: 'SourceError', message: /Could not clone .*(Couldn't connect|Connection refused|Failed to connect)/s })
  t.equal(server.seen.length, before, 'the server the system resolver names was never asked')
})
