import type { BranchT, TagT } from '../../schemas/git.js'
import { gitErrors } from './errors.js'
import { checkRefName, checkRevision, matchesRefPattern } from './names.js'
import type { ProtectedBranches } from './protection.js'
import type { WriteLevel } from './pattern-rules.js'
import type { ProtectedTags } from './tag-protection.js'
import type { RepoReader } from './reader.js'
import type { Repo } from './repositories.js'
import type { Signature, Writer } from './writer.js'

/** Branches and tags through the API; pushes change them through git and the pre-receive hook. */
export class Refs {
  constructor (private readonly deps: { reader: RepoReader, writer: Writer, protection: ProtectedBranches, tagProtection: ProtectedTags }) {}

  async branches (repo: Repo): Promise<BranchT[]> {
    const patterns = (await this.deps.protection.list(repo)).map((rule) => rule.pattern)
    const branches = await this.deps.reader.branches(repo.gitDir)
    return branches.map(({ name, commit }) => ({ name, commit, default: name === repo.defaultBranch, protected: patterns.some((pattern) => matchesRefPattern(pattern, name)) }))
  }

  async createBranch (repo: Repo, level: WriteLevel, input: { name: string, from?: string }): Promise<BranchT> {
    const name = checkRefName(input.name, 'body.name', 'branch')
    const commit = await this.deps.reader.resolveCommit(repo.gitDir, checkRevision(input.from ?? repo.defaultBranch, 'body.from'))
    await this.deps.protection.check(repo, name, level, 'create')
    await this.deps.writer.createRef(repo.gitDir, `refs/heads/${name}`, commit)
    return (await this.branches(repo)).find((branch) => branch.name === name) as BranchT
  }

  async deleteBranch (repo: Repo, level: WriteLevel, name: string): Promise<void> {
    checkRefName(name, 'query.name', 'branch')
    if (name === repo.defaultBranch) throw gitErrors.defaultBranch({ branch: name })
    const commit = await this.current(repo, `refs/heads/${name}`, () => gitErrors.branchNotFound({ branch: name }))
    await this.deps.protection.check(repo, name, level, 'delete')
    await this.deps.writer.deleteRef(repo.gitDir, `refs/heads/${name}`, commit)
  }

  async tags (repo: Repo): Promise<TagT[]> {
    return await this.deps.reader.tags(repo.gitDir)
  }

  async createTag (repo: Repo, level: WriteLevel, tagger: Signature, input: { name: string, target?: string, message?: string }): Promise<TagT> {
    const name = checkRefName(input.name, 'body.name', 'tag')
    const commit = await this.deps.reader.resolveCommit(repo.gitDir, checkRevision(input.target ?? repo.defaultBranch, 'body.target'))
    await this.deps.tagProtection.check(repo, name, level, 'create')
    if (input.message === undefined) await this.deps.writer.createRef(repo.gitDir, `refs/tags/${name}`, commit)
    else await this.deps.writer.annotatedTag(repo.gitDir, name, commit, input.message, tagger)
    return await this.deps.reader.tag(repo.gitDir, name)
  }

  async deleteTag (repo: Repo, level: WriteLevel, name: string): Promise<void> {
    checkRefName(name, 'query.name', 'tag')
    const oid = await this.current(repo, `refs/tags/${name}`, () => gitErrors.tagNotFound({ tag: name }))
    await this.deps.tagProtection.check(repo, name, level, 'delete')
    await this.deps.writer.deleteRef(repo.gitDir, `refs/tags/${name}`, oid)
  }

  /** What a ref points at now (the tag object for annotated tags), for a compare-and-swap. */
  private async current (repo: Repo, ref: string, missing: () => Error): Promise<string> {
    if (!(await this.deps.reader.refExists(repo.gitDir, ref))) throw missing()
    return await this.deps.reader.refTarget(repo.gitDir, ref)
  }
}
