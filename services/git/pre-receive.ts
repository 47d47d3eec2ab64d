import { chmod, mkdir, rename, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { matchesRefPattern, reservedRefNameProblem } from './names.js'

/** The environment variable that carries a push's policy from the server into the hook. */
export const POLICY_ENV = 'PLINTH_PUSH_POLICY'

/**
 * The one pre-receive hook, shared by every repository through
 * `core.hooksPath`. git runs it after the pack is received and checked
 * (objects still quarantined) and before any ref moves; a non-zero exit
 * refuses the whole push, and what it prints reaches the client as `remote:`
 * lines. The server decides the rules for the caller and passes them in
 * PLINTH_PUSH_POLICY; the hook only applies them, matching branches with the
 * server's own `matchesRefPattern`, whose source it embeds. Tags are
 * judged by their own rules: creating, moving and deleting each allowed or
 * not.
 * Only refs/heads/ and refs/tags/ may be pushed: other namespaces are the
 * server's own. Names the REST routes refuse (`HEAD`, `-x`, `refs/...`
 * under refs/heads/) are refused here too, as git's own branch commands and
 * Gitea do; deleting one pushed before this check is allowed, so it can go.
 */
const HOOK_BODY = String.raw`'use strict'
const { execFileSync } = require('node:child_process')
const ZERO = /^0+$/
const matchesRefPattern = ${matchesRefPattern.toString()}
const reservedRefNameProblem = ${reservedRefNameProblem.toString()}
const policy = JSON.parse(process.env.${POLICY_ENV} || 'null')
const refuse = (problems) => {
  for (const problem of problems) process.stderr.write('Plinth: ' + problem + '\n')
  process.exit(1)
}
if (policy === null) refuse(['pushes must go through the Plinth server'])
const fastForward = (oldOid, newOid) => {
  try {
    execFileSync('git', ['merge-base', '--is-ancestor', oldOid, newOid], { stdio: 'ignore' })
    return true
  } catch (error) {
    if (error.status === 1) return false
    throw error
  }
}
let input = ''
process.stdin.setEncoding('utf8')
process.stdin.on('data', (chunk) => { input += chunk })
process.stdin.on('end', () => {
  const problems = []
  for (const line of input.split('\n')) {
    if (line === '') continue
    const [oldOid, newOid, ref] = line.split(' ')
    if (!ref.startsWith('refs/heads/') && !ref.startsWith('refs/tags/')) { problems.push(ref + ': only branches and tags may be pushed'); continue }
    const reserved = reservedRefNameProblem(ref.slice(ref.indexOf('/', 'refs/'.length) + 1))
    if (reserved !== null && !ZERO.test(newOid)) { problems.push(ref + ': the name ' + reserved); continue }
    if (ref.startsWith('refs/tags/')) {
      const tag = ref.slice('refs/tags/'.length)
      const change = ZERO.test(oldOid) ? 'create' : ZERO.test(newOid) ? 'delete' : 'update'
      const rule = policy.tags.find((candidate) => matchesRefPattern(candidate.pattern, tag) && !candidate[change])
      if (rule !== undefined) problems.push('tag ' + tag + ': protected by "' + rule.pattern + '"; you may not ' + { create: 'create', update: 'move', delete: 'delete' }[change] + ' it')
      continue
    }
    const branch = ref.slice('refs/heads/'.length)
    const deleting = ZERO.test(newOid)
    if (deleting && branch === policy.defaultBranch) { problems.push(branch + ': the default branch cannot be deleted'); continue }
    for (const rule of policy.rules) {
      if (!matchesRefPattern(rule.pattern, branch)) continue
      const why = branch + ': protected by "' + rule.pattern + '"; '
      if (!rule.push) problems.push(why + 'you may not push to it')
      else if (deleting && !rule.delete) problems.push(why + 'it may not be deleted')
      else if (!deleting && !ZERO.test(oldOid) && !rule.forcePush && !fastForward(oldOid, newOid)) problems.push(why + 'force pushes are not allowed')
    }
  }
  if (problems.length > 0) refuse(problems)
})
`

/** Writes the hook (with this Node as its interpreter) into `hooksDir`, atomically, so running pushes never see half a file. */
export async function installHooks (hooksDir: string): Promise<void> {
  await mkdir(hooksDir, { recursive: true })
  // The hook has no extension: a package.json beside it keeps Node from reading it as an ES module.
  await writeFile(join(hooksDir, 'package.json'), '{ "type": "commonjs" }\n')
  const target = join(hooksDir, 'pre-receive')
  const temporary = `${target}.${process.pid}.tmp`
  await writeFile(temporary, `#!${process.execPath}\n${HOOK_BODY}`)
  await chmod(temporary, 0o755)
  await rename(temporary, target)
}
