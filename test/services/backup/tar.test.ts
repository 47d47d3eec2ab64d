import t from 'tap'
import { execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { PassThrough, Readable } from 'node:stream'
import { readTar, TarWriter } from '../../../services/backup/tar.js'
import { tempDir } from '../../helper.js'

async function pack (entries: Array<{ path: string, data?: Buffer }>): Promise<Buffer> {
  const out = new PassThrough()
  const chunks: Buffer[] = []
  out.on('data', (chunk: Buffer) => chunks.push(chunk))
  const tar = new TarWriter(out)
  for (const entry of entries) {
    if (entry.data === undefined) await tar.directory(entry.path, 0o700, Date.now())
    else await tar.file(entry.path, entry.data.length, 0o600, Date.now(), [entry.data])
  }
  await tar.end()
  out.end()
  return Buffer.concat(chunks)
}

const long = `data/${'deep-folder/'.repeat(12)}naïve – ${'x'.repeat(120)}.bin`

t.test('what the writer packs, GNU tar and the reader read back: long and non-ASCII names, sizes off the block', async (t) => {
  const small = randomBytes(513)
  const big = randomBytes(70_001)
  const archive = await pack([{ path: 'data' }, { path: 'data/empty.txt', data: Buffer.alloc(0) }, { path: 'data/small.bin', data: small }, { path: long, data: big }])
  const dir = tempDir(t, 'plinth-tar-')
  writeFileSync(join(dir, 'a.tar'), archive)
  const listed = execFileSync('tar', ['-tf', 'a.tar'], { cwd: dir, encoding: 'utf8' }).split('\n').filter((line) => line !== '')
  t.same(listed, ['data/', 'data/empty.txt', 'data/small.bin', long], 'GNU tar lists the same names')
  mkdirSync(join(dir, 'out'))
  execFileSync('tar', ['-xf', '../a.tar'], { cwd: join(dir, 'out') })
  t.same(readFileSync(join(dir, 'out', long)), big, 'GNU tar extracts the bytes')

  const read: Array<{ path: string, type: string, data: Buffer }> = []
  for await (const entry of readTar(Readable.from([archive]))) {
    const parts: Buffer[] = []
    for await (const part of entry.body) parts.push(part)
    read.push({ path: entry.path, type: entry.type, data: Buffer.concat(parts) })
  }
  t.same(read.map(({ path, type }) => [path, type]), [['data', 'directory'], ['data/empty.txt', 'file'], ['data/small.bin', 'file'], [long, 'file']])
  t.same(read[2].data, small)
  t.same(read[3].data, big)

  const links = join(dir, 'links')
  mkdirSync(links)
  writeFileSync(join(links, 'target'), 'x')
  execFileSync('ln', ['-s', '/etc/passwd', join(links, 'link')])
  const foreign = execFileSync('tar', ['-cf', '-', '-C', links, 'link'])
  await t.rejects(async () => { for await (const entry of readTar(Readable.from([foreign]))) void entry }, { name: 'TarFormatError', message: 'link is neither a file nor a directory' }, 'a symbolic link is refused')
  const damaged = Buffer.from(archive)
  damaged[600] ^= 0x01
  await t.rejects(async () => { for await (const entry of readTar(Readable.from([damaged]))) for await (const part of entry.body) void part }, { message: /after data is damaged/ }, 'a damaged header is named by what came before it')
})
