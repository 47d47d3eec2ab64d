import { chmodSync, mkdirSync, readlinkSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t, { type Test } from 'tap'
import { buildContext } from '../../../services/hosting/container-driver/build-context.js'
import { BuildFailedError } from '../../../services/hosting/runtime.js'
import { detectSourceKind, nodeStartCommand, planSource, procfileCommand } from '../../../services/hosting/source-plan.js'
import { copyTree, digestSource, listSource } from '../../../services/hosting/source-tree.js'
import { tempDir } from '../../helper.js'
import { rejection } from './driver-harness.js'

const fixtures = fileURLToPath(new URL('../../fixtures/hosting/', import.meta.url))

async function refusal (t: Test, promise: Promise<unknown>, reason: RegExp): Promise<void> {
  const error = await rejection(promise)
  t.type(error, BuildFailedError)
  t.match(error, { reason })
}

function tree (t: Test, files: Record<string, string>): string {
  const dir = tempDir(t, 'plinth-plan-')
  for (const [path, contents] of Object.entries(files)) {
    mkdirSync(join(dir, path, '..'), { recursive: true })
    writeFileSync(join(dir, path), contents)
  }
  return dir
}

t.test('source kinds are detected in one order: package.json, Procfile, index.html', async (t) => {
  t.equal(await detectSourceKind(join(fixtures, 'node-hello')), 'node')
  t.equal(await detectSourceKind(join(fixtures, 'procfile-app')), 'procfile')
  t.equal(await detectSourceKind(join(fixtures, 'static-site')), 'static')
  t.equal(await detectSourceKind(tree(t, { Procfile: 'web: node a.js', 'package.json': '{}' })), 'node')
  await refusal(t, detectSourceKind(tempDir(t)), /^Cannot tell how to build this source: it has no package\.json, Procfile or index\.html/)
})

t.test('a plan says what to install, whether to build and what to start', async (t) => {
  t.same(await planSource(join(fixtures, 'node-hello'), 'auto'), { kind: 'node', install: 'ci', runsBuildScript: true, command: ['node', 'server.js'], staticRoot: null })
  t.same(await planSource(join(fixtures, 'crash-on-start'), 'node'), { kind: 'node', install: null, runsBuildScript: false, command: ['node', 'server.js'], staticRoot: null })
  t.same(await planSource(join(fixtures, 'procfile-app'), 'auto'), { kind: 'procfile', install: null, runsBuildScript: false, command: ['node', 'web.js'], staticRoot: null })
  t.same(await planSource(join(fixtures, 'static-site'), 'static'), { kind: 'static', install: null, runsBuildScript: false, command: null, staticRoot: '.' })

  t.match(await planSource(tree(t, { 'package.json': JSON.stringify({ dependencies: { left: '1' } }), 'server.js': '' }), 'auto'), { install: 'install', command: ['node', 'server.js'] })
  t.match(await planSource(tree(t, { 'package.json': JSON.stringify({ devDependencies: { left: '1' } }), 'npm-shrinkwrap.json': '{}', 'server.js': '' }), 'auto'), { install: 'ci' })
  t.match(await planSource(tree(t, { 'package.json': JSON.stringify({ scripts: { start: 'node a.js' } }), Procfile: 'worker: node worker.js\r\n  web:   node web.js --flag \n' }), 'auto'),
    { kind: 'node', command: ['node', 'web.js', '--flag'] }, 'a Procfile web line wins over the start script')
  t.match(await planSource(tree(t, { 'package.json': JSON.stringify({ scripts: { start: 'node a.js' } }), Procfile: 'worker: node worker.js\n' }), 'auto'),
    { command: ['node', 'a.js'] }, 'a Procfile without a web line leaves a Node app its start script')
  for (const root of ['dist', 'public', 'build']) {
    t.match(await planSource(tree(t, { 'README.md': 'x', [`${root}/index.html`]: '<h1>' }), 'auto'), { kind: 'static', staticRoot: root })
  }
})

t.test('one start-command rule: argv, never a shell line', async (t) => {
  t.same(procfileCommand('web: node  server.js --max-old-space-size=256'), ['node', 'server.js', '--max-old-space-size=256'])
  t.equal(procfileCommand('worker: node w.js'), null)
  t.throws(() => procfileCommand('web: node server.js --port=$PORT'), { message: /needs a shell \(it uses "\$"\)/ })
  t.throws(() => procfileCommand('web: npm run migrate && node server.js'), { message: /it uses "&"/ })
  t.throws(() => procfileCommand('web:   '), { message: /no command/ })

  t.same(nodeStartCommand({ scripts: { start: 'node dist/main.js --enable-source-maps' } }, false), ['node', 'dist/main.js', '--enable-source-maps'], 'plain node runs directly')
  t.same(nodeStartCommand({ scripts: { start: 'NODE_ENV=production node app.js' } }, true), ['npm', 'start'], 'anything else runs as npm runs it')
  t.same(nodeStartCommand({ scripts: { start: 'node $ENTRY' } }, false), ['npm', 'start'])
  t.same(nodeStartCommand({ scripts: { start: 'next start' } }, false), ['npm', 'start'], 'a bin from node_modules needs npm\'s PATH')
  t.same(nodeStartCommand({ main: 'lib/index.js' }, true), ['node', 'lib/index.js'])
  t.same(nodeStartCommand({}, true), ['node', 'server.js'])
  t.equal(nodeStartCommand({ main: '' }, false), null)
})

t.test('a tree that does not fit its kind is refused with the reason', async (t) => {
  const empty = tempDir(t)
  await refusal(t, planSource(empty, 'node'), /needs a package\.json/)
  await refusal(t, planSource(empty, 'procfile'), /needs a Procfile/)
  await refusal(t, planSource(empty, 'static'), /needs an index\.html/)
  await refusal(t, planSource(tree(t, { Procfile: 'worker: node worker.js\n' }), 'auto'), /The Procfile has no web line/)
  await refusal(t, planSource(tree(t, { 'package.json': '[1, 2]' }), 'auto'), /package\.json is not valid: not an object/)
  await refusal(t, planSource(tree(t, { 'package.json': '{ nope' }), 'auto'), /package\.json is not valid/)
  await refusal(t, planSource(tree(t, { 'package.json': '{}' }), 'auto'), /No start command/)
})

t.test('one digest: the same tree digests the same through the shared listing, the process copy and the container tar', async (t) => {
  const source = join(fixtures, 'node-hello')
  const digest = await digestSource(source)
  t.match(digest, /^[0-9a-f]{64}$/)
  const copied = await copyTree(source, join(tempDir(t), 'copy'), null)
  t.equal(copied.digest, digest)
  t.equal(copied.files, 4)
  const context = buildContext(await listSource(source), 'FROM scratch\n')
  for await (const chunk of context.stream) void chunk
  t.equal(context.sourceDigest(), digest)

  const site = tree(t, { 'index.html': 'x', 'run.sh': '#!/bin/sh\n' })
  const before = await digestSource(site)
  chmodSync(join(site, 'run.sh'), 0o755)
  t.not(await digestSource(site), before, 'the execute bit counts')
  mkdirSync(join(site, '.git'))
  writeFileSync(join(site, '.git', 'HEAD'), 'ref')
  chmodSync(join(site, 'run.sh'), 0o644)
  t.equal(await digestSource(site), before, '.git does not count')
})

t.test('links must stay inside the tree, through every link on the way', async (t) => {
  const outside = tree(t, { 'index.html': 'x' })
  symlinkSync('/etc/passwd', join(outside, 'passwd'))
  await refusal(t, listSource(outside), /^passwd is a link to \/etc\/passwd, outside the source$/)

  // `d` is the root itself, so `sub/e`'s `..` steps out of the tree although its text looks inside.
  const sly = tree(t, { 'index.html': 'x', 'sub/keep': '' })
  symlinkSync('..', join(sly, 'sub', 'd'))
  symlinkSync('d/../../etc/hostname', join(sly, 'sub', 'e'))
  await refusal(t, listSource(sly), /^sub\/e is a link to .*, outside the source$/)

  const dangling = tree(t, { 'index.html': 'x' })
  symlinkSync('nowhere.html', join(dangling, 'gone'))
  await refusal(t, listSource(dangling), /^gone is a link that leads nowhere/)

  const inside = tree(t, { 'index.html': 'x', 'assets/app.js': 'js' })
  symlinkSync(join(inside, 'assets', 'app.js'), join(inside, 'app.js'))
  symlinkSync('.', join(inside, 'self'))
  const copy = join(tempDir(t), 'copy')
  await copyTree(inside, copy, null)
  t.equal(readlinkSync(join(copy, 'app.js')), 'assets/app.js', 'a link is kept, relative, pointing inside the copy')
  t.equal(readlinkSync(join(copy, 'self')), '.')
})
