import { GIT_LIMITS, type FileDiffT } from '../../schemas/git.js'

type Status = FileDiffT['status']
const STATUS: Record<string, Status> = { A: 'added', M: 'modified', D: 'deleted', R: 'renamed', C: 'copied', T: 'typechange' }

/**
 * Reads `git diff-tree -r -M -z --raw --numstat` (NUL-separated, so any file
 * name survives): first one raw record per file, then one numstat record per
 * file in the same order.
 */
export function parseDiffTree (output: Buffer): FileDiffT[] {
  const tokens = output.toString('utf8').split('\0')
  const files: FileDiffT[] = []
  let i = 0
  while (i < tokens.length && tokens[i].startsWith(':')) {
    const letter = tokens[i].split(' ')[4]?.[0] ?? 'M'
    const twoPaths = letter === 'R' || letter === 'C'
    const oldPath = twoPaths ? tokens[i + 1] : null
    const path = twoPaths ? tokens[i + 2] : tokens[i + 1]
    files.push({ path, oldPath, status: STATUS[letter] ?? 'modified', additions: 0, deletions: 0, binary: false, patch: null })
    i += twoPaths ? 3 : 2
  }
  for (const file of files) {
    const [added = '0', deleted = '0', inline = ''] = (tokens[i] ?? '').split('\t')
    // A rename's numstat leaves the path empty and gives both paths as the next two tokens.
    i += inline === '' ? 3 : 1
    file.binary = added === '-'
    file.additions = file.binary ? 0 : Number(added)
    file.deletions = file.binary ? 0 : Number(deleted)
  }
  return files
}

/**
 * Hands each file its section of a unified diff printed for the same files
 * in the same order, while the total stays within the limit; returns whether
 * the limit cut it short.
 */
export function attachPatches (files: FileDiffT[], patch: string): boolean {
  const sections = patch.split(/^(?=diff --git )/m).filter((section) => section.startsWith('diff --git '))
  let budget: number = GIT_LIMITS.diffPatchBytes
  let truncated = false
  files.forEach((file, index) => {
    const section = sections[index]
    if (section === undefined || file.binary) return
    const size = Buffer.byteLength(section)
    if (size > budget) { truncated = true; budget = 0; return }
    budget -= size
    file.patch = section
  })
  return truncated
}
