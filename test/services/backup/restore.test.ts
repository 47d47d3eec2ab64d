import t, { type Test } from 'tap'
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { PassThrough } from 'node:stream'
import { gzipSync } from 'node:zlib'
import Database from 'better-sqlite3'
import { restoreBackup } from '../../../services/backup/restore.js'
import { writeBackup, type BackupSources } from '../../../services/backup/backup.js'
import type { BackupManifest } from '../../../services/backup/manifest.js'
import { TarWriter } from '../../../services/backup/tar.js'
import { tempDir } from '../../helper.js'

const sha256 = (data: Buffer): string => createHash('sha256').update(data).digest('hex')

/** A bare ustar header of any type (a symlink, a hard link), which the writer never makes. */
function rawHeader (name: string, type: string, size = 0): Buffer {
  const block = Buffer.alloc(512)
  block.write(name, 0)
  block.write('0000600\0', 100)
  block.write(`${size.toString(8).padStart(11, '0')}\0`, 124)
  block.write('00000000000\0', 136)
  block.fill(0x20, 148, 156)
  block.write(type, 156)
  if (type === '1' || type === '2') block.write('/etc/passwd', 157)
  block.write('ustar\0', 257)
  block.write('00', 263)
  let sum = 0
  for (const byte of block) sum += byte
  block.write(sum.toString(8).padStart(6, '0') + '\0 ', 148)
  return block
}

type Entry = { path: string, data?: Buffer } | { raw: Buffer }

const STORE: Entry[] = [{ path: 'data' }, { path: 'data/plinth.db', data: Buffer.from('a store') }]

/**
 * A gzip-compressed archive of `entries` and, last, a manifest listing each
 * file with its size and digest (roots `data` only, the embedded store),
 * which `edit` may change or replace with any text.
 */
async function archive (t: Test, entries: Entry[], edit: (manifest: BackupManifest) => unknown = (m) => m): Promise<string> {
  const out = new PassThrough()
  const chunks: Buffer[] = []
  out.on('data', (chunk: Buffer) => chunks.push(chunk))
  const tar = new TarWriter(out)
  const manifest: BackupManifest = { format: 'plinth-backup', version: 1, createdAt: '2026-11-29T08:00:00.000Z', engine: 'sqlite', includesKeys: false, roots: [{ name: 'data', variable: 'DATA_DIR' }], files: [] }
  for (const entry of entries) {
    if ('raw' in entry) out.write(entry.raw)
    else if (entry.data === undefined) await tar.directory(entry.path, 0o700, Date.now())
    else {
      await tar.file(entry.path, entry.data.length, 0o600, Date.now(), [entry.data])
      manifest.files.push({ path: entry.path, size: entry.data.length, sha256: sha256(entry.data) })
    }
  }
  const edited = edit(manifest)
  const body = Buffer.from(typeof edited === 'string' ? edited : JSON.stringify(edited))
  await tar.file('manifest.json', body.length, 0o600, Date.now(), [body])
  await tar.end()
  out.end()
  const file = join(tempDir(t, 'plinth-archive-'), 'backup.tar.gz')
  writeFileSync(file, gzipSync(Buffer.concat(chunks)))
  return file
}

/** The directories a server restores into, under one fresh folder: DATA_DIR absent, git and hosting inside it unless moved out. */
function targets (t: Test, outside: { git?: boolean, hosting?: boolean, engine?: 'sqlite' | 'mongodb' } = {}): BackupSources & { base: string } {
  const base = tempDir(t, 'plinth-restore-')
  return {
    base,
    dataDir: join(base, 'data'),
    reposDir: outside.git === true ? join(base, 'repos') : join(base, 'data', 'git'),
    hostingDir: outside.hosting === true ? join(base, 'apps') : join(base, 'data', 'hosting'),
    engine: outside.engine ?? 'sqlite'
  }
}

const file = (path: string, text = path): Entry => ({ path, data: Buffer.from(text) })
const extra = (path: string, text = ''): (m: BackupManifest) => BackupManifest => (m) => ({ ...m, files: [...m.files, { path, size: Buffer.byteLength(text), sha256: sha256(Buffer.from(text)) }] })

t.test('an archive that does not fit this server, or is malformed, is refused naming the entry or field, before anything is written', async (t) => {
  const cases: Array<[string, Entry[], ((m: BackupManifest) => unknown) | undefined, Parameters<typeof targets>[1], RegExp]> = [
    // Paths that would leave the roots.
    ['a .. entry', [...STORE, file('data/../../etc/passwd')], undefined, {}, /"data\/\.\.\/\.\.\/etc\/passwd", which is not a path a backup writes/],
    ['an absolute entry', [...STORE, file('/etc/passwd')], undefined, {}, /"\/etc\/passwd", which is not a path a backup writes/],
    ['a . entry', [...STORE, file('data/./x')], undefined, {}, /"data\/\.\/x", which is not a path a backup writes/],
    ['an entry outside the roots', [...STORE, file('etc/passwd')], undefined, {}, /"etc\/passwd", which is not a path a backup writes/],
    ['a symlink entry', [...STORE, { raw: rawHeader('data/link', '2') }], undefined, {}, /data\/link is neither a file nor a directory/],
    ['a hard link entry', [...STORE, { raw: rawHeader('data/link', '1') }], undefined, {}, /data\/link is neither a file nor a directory/],
    ['a root as a file', [file('data'), file('data/plinth.db')], undefined, {}, /"data" as a file, where a backup has a folder/],
    // Roots that do not match where this server keeps its parts.
    ['a git/ entry where GIT_REPOS_DIR is inside DATA_DIR', [...STORE, file('git/p/HEAD')], undefined, {}, /"git\/p\/HEAD", under git\/, which this server keeps inside DATA_DIR/],
    ['a manifest with git/ where GIT_REPOS_DIR is inside DATA_DIR', STORE, (m) => ({ ...m, roots: [...m.roots, { name: 'git', variable: 'GIT_REPOS_DIR' }] }), {}, /roots\[1\] is git\/: GIT_REPOS_DIR was outside DATA_DIR/],
    ['a manifest without hosting/ where HOSTING_DIR is outside DATA_DIR', STORE, undefined, { hosting: true }, /roots have no hosting\/: HOSTING_DIR was inside DATA_DIR .* \(.*apps\)/],
    ['a root under another variable', STORE, (m) => ({ ...m, roots: [{ name: 'data', variable: 'HOME' }] }), {}, /roots\[0\] says data\/ is "HOME", not DATA_DIR/],
    ['a root named twice', STORE, (m) => ({ ...m, roots: [...m.roots, ...m.roots] }), {}, /roots\[1\] names data\/ a second time/],
    ['repositories elsewhere under DATA_DIR', STORE, (m) => ({ ...m, parts: { git: 'data/repos', hosting: 'data/hosting' } }), {}, /parts\.git is "data\/repos": GIT_REPOS_DIR was there .* this server's is "data\/git"/],
    ['hosting in its own root, per its parts, where HOSTING_DIR is inside', STORE, (m) => ({ ...m, parts: { git: 'data/git', hosting: 'hosting' } }), {}, /parts\.hosting is "hosting"/],
    ['parts that are not strings', STORE, (m) => ({ ...m, parts: { git: 1, hosting: 'data/hosting' } }), {}, /its parts\.git is wrong/],
    ['a backup of the embedded store on MongoDB', STORE, undefined, { engine: 'mongodb' }, /its engine is sqlite: .* this server uses MongoDB/],
    ['a MongoDB backup that lists a store', STORE, (m) => ({ ...m, engine: 'mongodb' }), { engine: 'mongodb' }, /lists data\/plinth\.db, though its engine is mongodb/],
    ['an embedded backup without its store', [{ path: 'data' }], undefined, {}, /does not list data\/plinth\.db/],
    ['a manifest path with ..', STORE, extra('data/../../etc/passwd'), {}, /files\[1\]\.path is "data\/\.\.\/\.\.\/etc\/passwd", which is not a path a backup writes/],
    ['a manifest path outside the roots', STORE, extra('/etc/passwd'), {}, /files\[1\]\.path is "\/etc\/passwd", which is not a path/],
    // A manifest that is not one.
    ['a manifest that is not JSON', STORE, () => '{ "format": "plinth-backup", ', {}, /manifest\.json is not JSON/],
    ['a manifest that is not an object', STORE, () => 'null', {}, /manifest\.json is not a Plinth backup manifest/],
    ['a manifest without files', STORE, ({ files, ...rest }) => rest, {}, /manifest\.json is not a Plinth backup manifest of version 1: its files is wrong/],
    ['a manifest of another version', STORE, (m) => ({ ...m, version: 2 }), {}, /its version is wrong/],
    ['a size that is a string', STORE, (m) => ({ ...m, files: [{ ...m.files[0], size: String(m.files[0].size) }] }), {}, /its files\[0\]\.size is wrong/],
    ['a file listed as null', STORE, (m) => ({ ...m, files: [...m.files, null] }), {}, /its files\[1\] is wrong/],
    ['roots that are not a list', STORE, (m) => ({ ...m, roots: 'data' }), {}, /its roots is wrong/],
    ['a manifest that is a folder', [...STORE, { raw: rawHeader('manifest.json/', '5') }], undefined, {}, /manifest\.json is a folder/],
    // Files and folders that disagree, entries twice.
    ['a listed file the archive has as a folder', [...STORE, { path: 'data/a' }], extra('data/a'), {}, /lists data\/a as a file, but the archive holds it as a folder/],
    ['a listed file inside what the archive has as a file', [...STORE, file('data/a')], extra('data/a/b'), {}, /lists data\/a\/b, inside the folder data\/a, but the archive holds data\/a as a file/],
    ['an entry inside a file', [...STORE, file('data/a'), file('data/a/b')], undefined, {}, /holds data\/a\/b inside data\/a, which it holds as a file/],
    ['a folder where a file was', [...STORE, file('data/a'), { path: 'data/a' }], undefined, {}, /holds data\/a both as a file and as a folder/],
    ['a file where a folder was', [...STORE, { path: 'data/a' }, file('data/a')], undefined, {}, /holds data\/a both as a file and as a folder/],
    ['a file twice', [...STORE, file('data/a'), file('data/a', 'other')], undefined, {}, /data\/a appears twice/],
    ['a folder twice', [...STORE, { path: 'data/a' }, { path: 'data/a' }], undefined, {}, /data\/a appears twice/],
    ['a file listed twice', STORE, (m) => ({ ...m, files: [...m.files, ...m.files] }), {}, /lists data\/plinth\.db twice/],
    ['a file not listed', [...STORE, file('data/a')], (m) => ({ ...m, files: m.files.slice(0, 1) }), {}, /data\/a is not in the manifest/],
    ['a listed file missing', STORE, extra('data/gone'), {}, /data\/gone is in the manifest but not in the archive/]
  ]
  for (const [name, entries, edit, where, why] of cases) {
    const archived = await archive(t, entries, edit)
    const target = targets(t, where)
    await t.rejects(restoreBackup(target, archived), { code: 'APP_BACKUP_ARCHIVE_INVALID', status: 400, message: why }, name)
    t.same(readdirSync(target.base), [], `${name}: nothing is written, not even DATA_DIR`)
  }
})

t.test('an archive whose roots match is restored, git/ and hosting/ into their own directories', async (t) => {
  const archived = await archive(t, [...STORE, file('data/files/a', 'bytes'), { path: 'git' }, file('git/p/HEAD', 'ref: main'), { path: 'hosting' }, { path: 'hosting/app' }],
    (m) => ({ ...m, roots: [...m.roots, { name: 'git', variable: 'GIT_REPOS_DIR' }, { name: 'hosting', variable: 'HOSTING_DIR' }], parts: { git: 'git', hosting: 'hosting' } }))
  const target = targets(t, { git: true, hosting: true })
  const manifest = await restoreBackup(target, archived)
  t.equal(manifest.files.length, 3)
  t.equal(readFileSync(join(target.dataDir, 'files/a'), 'utf8'), 'bytes')
  t.equal(readFileSync(join(target.reposDir, 'p/HEAD'), 'utf8'), 'ref: main')
  t.same(readdirSync(target.hostingDir), ['app'])
  t.same(readdirSync(target.dataDir).sort(), ['files', 'plinth.db'], 'no staging folder is left')
})

t.test('a restore that fails while moving into place undoes what it moved and leaves the targets as they were', async (t) => {
  // GIT_REPOS_DIR and HOSTING_DIR one folder, both holding `p`: the second move finds the first's `p` there.
  const archived = await archive(t, [...STORE, { path: 'git' }, file('git/p', 'a repository'), { path: 'hosting' }, file('hosting/p', 'an app')],
    (m) => ({ ...m, roots: [...m.roots, { name: 'git', variable: 'GIT_REPOS_DIR' }, { name: 'hosting', variable: 'HOSTING_DIR' }] }))
  const target = targets(t, { git: true })
  target.hostingDir = target.reposDir
  mkdirSync(target.reposDir)
  await t.rejects(restoreBackup(target, archived), { code: 'APP_RESTORE_TARGET_NOT_EMPTY', message: /HOSTING_DIR/ })
  t.notOk(existsSync(target.dataDir), 'DATA_DIR, absent before, is absent again')
  t.same(readdirSync(target.reposDir), [], 'the shared folder, empty before, is empty again')
})

t.test('a backup records where the repositories were under DATA_DIR, and restores only where the server keeps them there', async (t) => {
  const source = tempDir(t, 'plinth-source-')
  const db = new Database(join(source, 'plinth.db'))
  db.exec('CREATE TABLE kept (value TEXT)')
  db.close()
  mkdirSync(join(source, 'repos/p'), { recursive: true })
  writeFileSync(join(source, 'repos/p/HEAD'), 'ref: main')
  const archived = join(tempDir(t, 'plinth-archive-'), 'backup.tar.gz')
  const manifest = await writeBackup({ dataDir: source, reposDir: join(source, 'repos'), hostingDir: join(source, 'hosting'), engine: 'sqlite' }, archived)
  t.same(manifest.parts, { git: 'data/repos', hosting: 'data/hosting' })

  const elsewhere = targets(t)
  await t.rejects(restoreBackup(elsewhere, archived), { code: 'APP_BACKUP_ARCHIVE_INVALID', message: /parts\.git is "data\/repos"/ }, 'GIT_REPOS_DIR at its default, data/git')
  t.same(readdirSync(elsewhere.base), [])
  const same = targets(t)
  same.reposDir = join(same.dataDir, 'repos')
  await restoreBackup(same, archived)
  t.equal(readFileSync(join(same.reposDir, 'p/HEAD'), 'utf8'), 'ref: main')
})
