import t from 'tap'
import { execFileSync } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { tempDir } from '../helper.js'
import { packFiles, PlinthError } from '../../sdk/admin/index.js'

// What a browser's folder picker gives becomes a tar the system tar (the one hosting unpacks with) reads back whole.
t.test('packFiles writes a ustar archive that tar unpacks as given', async (t) => {
  const deep = `${'nested-folder/'.repeat(9)}${'a-rather-long-file-name-'.repeat(3)}.txt`
  const files = [
    { path: 'package.json', text: '{"name":"x"}\n' },
    { path: './src/index.js', text: 'console.log("hi")\n' },
    { path: 'empty.txt', text: '' },
    { path: 'block.bin', text: 'x'.repeat(512) },
    { path: 'ünïcode/файл.txt', text: 'utf-8 names\n' },
    { path: deep, text: 'past 100 bytes: split into prefix and name\n' }
  ]
  const archive = packFiles(files.map(({ path, text }) => ({ path, data: new Blob([text]) })))
  t.equal(archive.size % 512, 0, 'whole blocks')
  const dir = tempDir(t, 'plinth-pack-')
  const file = join(dir, 'source.tar')
  writeFileSync(file, Buffer.from(await archive.arrayBuffer()))
  const listed = execFileSync('tar', ['-tf', file], { encoding: 'utf8' }).trim().split('\n')
  t.same(listed, files.map(({ path }) => path.replace(/^\.\//, '')), 'every file listed, in order')
  execFileSync('tar', ['-xf', file, '-C', dir])
  for (const { path, text } of files) t.equal(readFileSync(join(dir, path), 'utf8'), text, `${path} unpacked as written`)
})

t.test('packFiles refuses what cannot be a relative path in a tar', async (t) => {
  for (const [path, code] of [['../escape.txt', 'SDK_PATH_INVALID'], ['a/../../b', 'SDK_PATH_INVALID'], ['', 'SDK_PATH_INVALID'], [`${'x'.repeat(120)}/${'y'.repeat(101)}`, 'SDK_PATH_TOO_LONG']]) {
    const error = (() => { try { packFiles([{ path, data: new Blob(['x']) }]) } catch (error) { return error } })()
    t.ok(error instanceof PlinthError, `${path.slice(0, 20)}: a PlinthError`)
    t.match(error, { code }, `${path.slice(0, 20)}: ${code}`)
  }
})
