import { execFile } from 'node:child_process'
import { createWriteStream, mkdirSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Readable } from 'node:stream'
import { finished } from 'node:stream/promises'
import { promisify } from 'node:util'
import t, { type Test } from 'tap'
import { buildContext, dockerfileFor, isBuildArgName } from '../../../services/hosting/container-driver/build-context.js'
import { ContainerDriver } from '../../../services/hosting/container-driver/index.js'
import { LineSplitter, readBuildMessages, readContainerOutput } from '../../../services/hosting/container-driver/output.js'
import { detectSourceKind, planSource, startCommand } from '../../../services/hosting/container-driver/source.js'
import { BuildFailedError } from '../../../services/hosting/runtime.js'
import { tempDir } from '../../helper.js'
import { rejection } from './driver-harness.js'

const run = promisify(execFile)
const fixtures = fileURLToPath(new URL('../../fixtures/hosting/', import.meta.url))

async function refusal (t: Test, promise: Promise<unknown>, reason: RegExp): Promise<void> {
  const error = await rejection(promise)
  t.type(error, BuildFailedError)
  t.match(error, { reason })
}

t.test('source kinds are detected from the tree', async (t) => {
  t.equal(await detectSourceKind(join(fixtures, 'node-hello')), 'node')
  t.equal(await detectSourceKind(join(fixtures, 'procfile-app')), 'procfile')
  t.equal(await detectSourceKind(join(fixtures, 'static-site')), 'static')
  await refusal(t, detectSourceKind(tempDir(t)), /^Cannot tell how to build this source/)
})

t.test('a plan says what to install, whether to build and what to start', async (t) => {
  t.same(await planSource(join(fixtures, 'node-hello'), 'auto'), { kind: 'node', install: 'ci', runsBuildScript: true, start: 'node server.js', staticRoot: null })
  t.same(await planSource(join(fixtures, 'crash-on-start'), 'node'), { kind: 'node', install: null, runsBuildScript: false, start: 'node server.js', staticRoot: null })
  t.same(await planSource(join(fixtures, 'procfile-app'), 'auto'), { kind: 'procfile', install: null, runsBuildScript: false, start: 'node web.js', staticRoot: null })
  t.same(await planSource(join(fixtures, 'static-site'), 'static'), { kind: 'static', install: null, runsBuildScript: false, start: null, staticRoot: '.' })

  const withDependencies = tempDir(t)
  writeFileSync(join(withDependencies, 'package.json'), JSON.stringify({ dependencies: { left: '1' } }))
  writeFileSync(join(withDependencies, 'server.js'), '')
  t.match(await planSource(withDependencies, 'auto'), { install: 'install', start: 'node server.js' })

  const procfileWins = tempDir(t)
  writeFileSync(join(procfileWins, 'package.json'), JSON.stringify({ scripts: { start: 'node a.js' } }))
  writeFileSync(join(procfileWins, 'Procfile'), 'worker: node worker.js\r\nweb:   node web.js --flag \n')
  t.match(await planSource(procfileWins, 'auto'), { kind: 'node', start: 'node web.js --flag' })
})

t.test('a tree that does not fit its kind is refused with the reason', async (t) => {
  const empty = tempDir(t)
  await refusal(t, planSource(empty, 'node'), /needs a package.json/)
  await refusal(t, planSource(empty, 'procfile'), /needs a Procfile/)
  await refusal(t, planSource(empty, 'static'), /needs an index.html/)

  const noWeb = tempDir(t)
  writeFileSync(join(noWeb, 'Procfile'), 'worker: node worker.js\n')
  await refusal(t, planSource(noWeb, 'auto'), /no web: line/)

  const notJson = tempDir(t)
  writeFileSync(join(notJson, 'package.json'), '[1, 2]')
  await refusal(t, planSource(notJson, 'auto'), /not a JSON object/)
  writeFileSync(join(notJson, 'package.json'), '{ nope')
  await refusal(t, planSource(notJson, 'auto'), /not a JSON object/)

  const noStart = tempDir(t)
  writeFileSync(join(noStart, 'package.json'), '{}')
  await refusal(t, planSource(noStart, 'auto'), /No start command/)
})

t.test('plain start lines run without a shell; others go through sh -c', async (t) => {
  t.same(startCommand(' node  server.js --port=$PORT '), ['/bin/sh', '-c', 'node  server.js --port=$PORT'])
  t.same(startCommand('node dist/main.js --max-old-space-size=256'), ['node', 'dist/main.js', '--max-old-space-size=256'])
  t.same(startCommand('npm run migrate && node server.js'), ['/bin/sh', '-c', 'npm run migrate && node server.js'])
})

t.test('the build context is a tar the real tar reads, with the Dockerfile beside the source', async (t) => {
  const source = tempDir(t)
  const deep = join(source, 'a'.repeat(60), 'b'.repeat(60))
  mkdirSync(deep, { recursive: true })
  writeFileSync(join(deep, 'long.txt'), 'deep file')
  writeFileSync(join(source, 'run.sh'), '#!/bin/sh\n', { mode: 0o755 })
  writeFileSync(join(source, 'empty'), '')
  symlinkSync('/etc/passwd', join(source, 'outside'))
  symlinkSync(`${'c'.repeat(120)}/target`, join(source, 'far'))
  mkdirSync(join(source, '.git'))
  writeFileSync(join(source, '.git', 'HEAD'), 'ref')

  const context = buildContext(source, 'FROM scratch\n')
  t.throws(() => context.sourceDigest(), /not been read/)
  const archive = join(tempDir(t), 'context.tar')
  await finished(context.stream.pipe(createWriteStream(archive)))
  const { stdout: listing } = await run('tar', ['-tvf', archive])
  t.match(listing, /-rw-r--r-- .* Dockerfile\n/)
  t.match(listing, /-rwxr-xr-x .* app\/run\.sh\n/)
  t.match(listing, new RegExp(`app/${'a'.repeat(60)}/${'b'.repeat(60)}/long\\.txt`))
  t.match(listing, /app\/outside -> \/etc\/passwd/, 'a symlink travels as a link, its target unread')
  t.match(listing, new RegExp(`app/far -> ${'c'.repeat(120)}/target`))
  t.notMatch(listing, /\.git/)
  const { stdout: content } = await run('tar', ['-xOf', archive, `app/${'a'.repeat(60)}/${'b'.repeat(60)}/long.txt`])
  t.equal(content, 'deep file')
  t.match(context.sourceDigest(), /^[0-9a-f]{64}$/)

  const again = buildContext(source, 'FROM other\n')
  for await (const chunk of again.stream) void chunk
  t.equal(again.sourceDigest(), context.sourceDigest(), 'the digest covers the source, not the Dockerfile')
  writeFileSync(join(source, 'empty'), 'now not')
  const changed = buildContext(source, 'FROM scratch\n')
  for await (const chunk of changed.stream) void chunk
  t.not(changed.sourceDigest(), context.sourceDigest())
})

t.test('the Dockerfile builds in one stage and keeps only /app in the next', async (t) => {
  const dockerfile = dockerfileFor({ kind: 'node', install: 'install', runsBuildScript: false, start: 'x', staticRoot: null }, 'base:1', ['node', 'x.js'], ['TOKEN'])
  t.equal(dockerfile, [
    'FROM base:1 AS build', 'WORKDIR /app', 'ARG TOKEN', 'COPY app/ /app/', 'RUN ["npm", "install", "--no-audit", "--no-fund"]',
    'FROM base:1', 'WORKDIR /app', 'COPY --from=build /app /app', 'CMD ["node","x.js"]', ''
  ].join('\n'))
  t.ok(isBuildArgName('SECRET_TOKEN'))
  t.notOk(isBuildArgName('1BAD'))
  t.notOk(isBuildArgName('A-B'))
})

t.test('engine output is cut into lines per stream', async (t) => {
  const frame = (stream: number, text: string): Buffer => {
    const header = Buffer.alloc(8)
    header[0] = stream
    header.writeUInt32BE(Buffer.byteLength(text), 4)
    return Buffer.concat([header, Buffer.from(text)])
  }
  const whole = Buffer.concat([frame(1, 'one\r\ntw'), frame(2, 'oops\n'), frame(1, 'o\nthree')])
  // Delivered in awkward pieces: a header split in two, a frame split across chunks.
  const pieces = [whole.subarray(0, 3), whole.subarray(3, 12), whole.subarray(12)]
  const lines: string[] = []
  await readContainerOutput(Readable.from(pieces), (line, stream) => lines.push(`${stream}:${line}`))
  t.same(lines, ['stdout:one', 'stderr:oops', 'stdout:two', 'stdout:three'])

  const failing = new Readable({ read () { this.destroy(new Error('cut')) } })
  await readContainerOutput(failing, () => t.fail('no lines'))

  const messages: unknown[] = []
  await readBuildMessages(Readable.from([Buffer.from('{"stream":"a\\n"}\n{"aux":'), Buffer.from('{"ID":"x"}}\n\nnot json\n')]), (message) => messages.push(message))
  t.same(messages, [{ stream: 'a\n' }, { aux: { ID: 'x' } }, { stream: 'not json\n' }])

  const seen: string[] = []
  const splitter = new LineSplitter((line) => seen.push(line))
  splitter.push('a\nb')
  splitter.flush()
  splitter.flush()
  t.same(seen, ['a', 'b'])
})

t.test('the driver takes an image reference, never a line of Dockerfile', async (t) => {
  t.throws(() => new ContainerDriver({ socketPath: '/nowhere.sock', baseImage: 'node:20\nRUN evil', artifactsDir: tempDir(t) }), /Not an image reference/)
  const driver = new ContainerDriver({ socketPath: join(tempDir(t), 'absent.sock'), baseImage: 'node:20-slim', artifactsDir: tempDir(t) })
  t.equal(driver.name, 'container')
  t.equal(driver.degradedReason, null)
  t.equal(await driver.stats('none').catch((error: NodeJS.ErrnoException) => error.code), 'ENOENT', 'an absent engine is an error, not a silent null')
  const failure = await rejection(driver.build({ appId: 'a', deploymentId: 'd', sourceDir: join(fixtures, 'procfile-app'), kind: 'auto', env: {}, log: { write: () => undefined }, signal: new AbortController().signal }))
  t.type(failure, BuildFailedError)
  t.match(failure, { reason: /The engine refused the build: .*ENOENT/ })
  await driver.close()
})
