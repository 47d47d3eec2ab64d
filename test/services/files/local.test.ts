import t from 'tap'
import { mkdirSync, readdirSync, writeFileSync, existsSync, utimesSync } from 'node:fs'
import { join } from 'node:path'
import { LocalFileStore } from '../../../services/files/local-file-store.js'
import { tempDir } from '../../helper.js'
import { collect, failingStream, fileStoreConformance } from './conformance.js'

const root = join(tempDir(t, 'plinth-files-'), 'files')
const files = new LocalFileStore(root)

await fileStoreConformance(t, async () => files)

/** Every file name under `dir`, recursively, relative to it. */
function listAll (dir: string): string[] {
  if (!existsSync(dir)) return []
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name).slice(dir.length + 1))
    .sort()
}

t.test('objects live under the root only, one file per key', async (t) => {
  await files.write('files/p1/f1', Buffer.from('one'))
  await files.writePart('uploads/s1', 5, Buffer.from('chunk'))
  t.same(listAll(join(root, 'files', 'p1')), ['f1.obj'])
  t.same(listAll(join(root, 'uploads')), ['s1.part'], 'staged parts share one file')
  await files.seal('uploads/s1', 'files/p1/f2')
  t.same(listAll(join(root, 'files', 'p1')), ['f1.obj', 'f2.obj'], 'sealing leaves no temp file')
  await files.deletePrefix('uploads/s1')
  t.same(listAll(join(root, 'uploads')), [], 'deletePrefix drops the staged file')
  t.same((await collect(await files.read('files/p1/f2'))).subarray(5).toString(), 'chunk', 'and the sealed object keeps its bytes')
  t.notOk(existsSync(join(root, '..', 'f1.obj')), 'nothing escapes the root')
})

t.test('failed writes leave no temp files behind', async (t) => {
  await t.rejects(files.write('tmpcheck/a', failingStream(Buffer.alloc(50_000, 1))))
  t.same(listAll(join(root, 'tmpcheck')), [], 'the temp file was removed')
})

t.test('a temp file left by a crash is not an object, and deletePrefix clears it', async (t) => {
  const dir = join(root, 'crashed', 's9')
  mkdirSync(dir, { recursive: true })
  writeFileSync(join(dir, '.3.obj.deadbeef.tmp'), 'half written')
  t.equal(await files.stat('crashed/s9/3'), null)
  await t.rejects(files.read('crashed/s9/3'), { code: 'APP_FILE_NOT_FOUND' })
  await files.deletePrefix('crashed/s9')
  t.notOk(existsSync(dir))
})

t.test('a reader that opened before a replace or delete keeps its version', async (t) => {
  await files.write('pinned/doc', Buffer.alloc(200_000, 'a'))
  const reader = await files.read('pinned/doc')
  await files.write('pinned/doc', Buffer.from('b'))
  t.same(await collect(reader), Buffer.alloc(200_000, 'a'), 'the open reader saw the old bytes in full')
  const second = await files.read('pinned/doc')
  await files.delete('pinned/doc')
  t.equal((await collect(second)).toString(), 'b')
})

t.test('a sealed object counts as written when it was sealed, not when its parts were', async (t) => {
  await files.writePart('uploads/old', 0, Buffer.from('staged a day ago'))
  const dayAgo = new Date(Date.now() - 24 * 60 * 60_000)
  utimesSync(join(root, 'uploads', 'old.part'), dayAgo, dayAgo)
  const before = Date.now() - 1000
  await files.seal('uploads/old', 'files/p3/sealed')
  const listed = []
  for await (const object of files.list('files/p3')) listed.push(object)
  t.same(listed.map((object) => object.key), ['files/p3/sealed'])
  t.ok(listed[0].writtenAt.getTime() >= before, 'the sweep of unheld files must not take a fresh upload for an old one')
})
