import { execFile } from 'node:child_process'
import { createWriteStream, existsSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Readable } from 'node:stream'
import { finished } from 'node:stream/promises'
import { promisify } from 'node:util'
import t from 'tap'
import { buildCacheId, buildContext, dockerfileFor, isBuildArgName } from '../../../services/hosting/container-driver/build-context.js'
import { ContainerDriver } from '../../../services/hosting/container-driver/index.js'
import { readBuildMessages, readContainerOutput } from '../../../services/hosting/container-driver/output.js'
import { LineSplitter } from '../../../services/hosting/line-splitter.js'
import { listSource } from '../../../services/hosting/source-tree.js'
import { BuildFailedError } from '../../../services/hosting/runtime.js'
import { tempDir } from '../../helper.js'
import { rejection } from './driver-harness.js'

const run = promisify(execFile)
const fixtures = fileURLToPath(new URL('../../fixtures/hosting/', import.meta.url))

t.test('the build context is a tar the real tar reads, with the Dockerfile beside the source', async (t) => {
  const source = tempDir(t)
  const deep = join(source, 'a'.repeat(60), 'b'.repeat(60))
  mkdirSync(deep, { recursive: true })
  writeFileSync(join(deep, 'long.txt'), 'deep file')
  writeFileSync(join(source, 'run.sh'), '#!/bin/sh\n', { mode: 0o755 })
  writeFileSync(join(source, 'empty'), '')
  symlinkSync(`${'a'.repeat(60)}/${'b'.repeat(60)}/long.txt`, join(source, 'far'))
  mkdirSync(join(source, '.git'))
  writeFileSync(join(source, '.git', 'HEAD'), 'ref')

  const context = buildContext(await listSource(source), 'FROM scratch\n')
  t.throws(() => context.sourceDigest(), /not been read/)
  const archive = join(tempDir(t), 'context.tar')
  await finished(context.stream.pipe(createWriteStream(archive)))
  const { stdout: listing } = await run('tar', ['-tvf', archive])
  t.match(listing, /-rw-r--r-- .* Dockerfile\n/)
  t.match(listing, /-rwxr-xr-x .* app\/run\.sh\n/)
  t.match(listing, new RegExp(`app/${'a'.repeat(60)}/${'b'.repeat(60)}/long\\.txt`))
  t.match(listing, new RegExp(`app/far -> ${'a'.repeat(60)}/${'b'.repeat(60)}/long\\.txt`), 'a link travels as a link, a long target in a PAX header')
  t.notMatch(listing, /\.git/)
  const { stdout: content } = await run('tar', ['-xOf', archive, `app/${'a'.repeat(60)}/${'b'.repeat(60)}/long.txt`])
  t.equal(content, 'deep file')
  t.match(context.sourceDigest(), /^[0-9a-f]{64}$/)

  const again = buildContext(await listSource(source), 'FROM other\n')
  for await (const chunk of again.stream) void chunk
  t.equal(again.sourceDigest(), context.sourceDigest(), 'the digest covers the source, not the Dockerfile')
  writeFileSync(join(source, 'empty'), 'now not')
  const changed = buildContext(await listSource(source), 'FROM scratch\n')
  for await (const chunk of changed.stream) void chunk
  t.not(changed.sourceDigest(), context.sourceDigest())
})

t.test('the Dockerfile builds in one stage, with the project\'s cache mounted, and keeps only /app in the next', async (t) => {
  const plan = { kind: 'node' as const, install: 'install' as const, runsBuildScript: true, command: ['node', 'x.js'], staticRoot: null }
  t.equal(dockerfileFor(plan, 'base:1', ['TOKEN'], null), [
    'FROM base:1 AS build', 'WORKDIR /app', 'ARG TOKEN', 'COPY app/ /app/', 'RUN ["npm","install","--no-audit","--no-fund"]', 'RUN ["npm","run","build"]',
    'FROM base:1', 'WORKDIR /app', 'COPY --from=build /app /app', 'CMD ["node","x.js"]', ''
  ].join('\n'), 'an engine without cache mounts builds with no cache at all')
  const cacheId = buildCacheId('p1')
  t.equal(cacheId, 'plinth-npm-p1')
  t.equal(dockerfileFor(plan, 'base:1', [], cacheId), [
    'FROM base:1 AS build', 'WORKDIR /app', 'COPY app/ /app/',
    'RUN --mount=type=cache,id=plinth-npm-p1,target=/plinth-npm-cache ["npm","install","--no-audit","--no-fund","--cache","/plinth-npm-cache","--prefer-offline"]',
    'RUN --mount=type=cache,id=plinth-npm-p1,target=/plinth-npm-cache ["npm","run","build","--cache","/plinth-npm-cache"]',
    'FROM base:1', 'WORKDIR /app', 'COPY --from=build /app /app', 'CMD ["node","x.js"]', ''
  ].join('\n'))
  for (const bad of ['', 'a/b', '../x', 'a,target=/', 'x'.repeat(65)]) t.equal(buildCacheId(bad), null, `no cache id from ${JSON.stringify(bad)}`)
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
  const failure = await rejection(driver.build({ projectId: 'p', appId: 'a', deploymentId: 'd', sourceDir: join(fixtures, 'procfile-app'), kind: 'auto', env: {}, log: { write: () => undefined }, signal: new AbortController().signal }))
  t.type(failure, BuildFailedError)
  t.match(failure, { reason: /The engine refused the build: .*ENOENT/ })

  // Neither reaches the engine: another driver's artifact, and a static one whose id names no directory of this driver.
  const artifactsDir = tempDir(t)
  const kept = join(artifactsDir, 'kept')
  mkdirSync(kept)
  const forged = { id: '..', driver: 'container' as const, kind: 'static' as const, ref: kept, command: null, sourceDigest: '', sizeBytes: 0, buildSeconds: 0 }
  const local = new ContainerDriver({ socketPath: join(tempDir(t), 'absent.sock'), baseImage: 'node:20-slim', artifactsDir })
  await local.discard(forged)
  await local.discard({ ...forged, id: 'kept', driver: 'process' })
  t.ok(existsSync(kept), 'nothing is removed by a ref, nor for another driver')
  await local.discard({ ...forged, id: 'kept' })
  t.notOk(existsSync(kept), 'a static artifact is removed by its id')
  await driver.close()
})
