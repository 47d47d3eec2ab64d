import t from 'tap'
import { attachPatches, parseDiffTree } from '../../../services/git/diff.js'
import { GIT_LIMITS, type FileDiffT } from '../../../schemas/git.js'

t.test('diff-tree -z output: plain, renamed, binary and odd names', async (t) => {
  const output = Buffer.from([
    ':100644 100644 a b M', 'with\ttab and\nnewline.txt',
    ':100644 100644 c d R075', 'old name.txt', 'new name.txt',
    ':000000 100644 0 e A', 'image.png',
    ':100644 000000 f 0 D', 'gone.txt',
    '2\t1\twith\ttab and\nnewline.txt',
    '3\t4\t', 'old name.txt', 'new name.txt',
    '-\t-\timage.png',
    '0\t7\tgone.txt', ''
  ].join('\0'))
  t.same(parseDiffTree(output), [
    { path: 'with\ttab and\nnewline.txt', oldPath: null, status: 'modified', additions: 2, deletions: 1, binary: false, patch: null },
    { path: 'new name.txt', oldPath: 'old name.txt', status: 'renamed', additions: 3, deletions: 4, binary: false, patch: null },
    { path: 'image.png', oldPath: null, status: 'added', additions: 0, deletions: 0, binary: true, patch: null },
    { path: 'gone.txt', oldPath: null, status: 'deleted', additions: 0, deletions: 7, binary: false, patch: null }
  ])
  t.same(parseDiffTree(Buffer.alloc(0)), [], 'an empty commit changes nothing')
})

t.test('patches go to their files until the size limit', async (t) => {
  const file = (path: string): FileDiffT => ({ path, oldPath: null, status: 'modified', additions: 1, deletions: 0, binary: false, patch: null })
  const files = [file('a'), { ...file('b'), binary: true }, file('c')]
  const section = (path: string, body = '+x\n') => `diff --git a/${path} b/${path}\n${body}`
  const huge = section('c', `+${'x'.repeat(GIT_LIMITS.diffPatchBytes)}\n`)
  t.equal(attachPatches(files, section('a') + section('b') + huge), true, 'cut short')
  t.equal(files[0].patch, section('a'))
  t.equal(files[1].patch, null, 'binary files carry no patch')
  t.equal(files[2].patch, null, 'past the limit')
  const small = [file('a')]
  t.equal(attachPatches(small, section('a')), false)
  t.equal(small[0].patch, section('a'))
})
