import fs from 'node:fs'
import { join } from 'node:path'
import git from 'isomorphic-git'
import { gitErrors } from './errors.js'
import { isShortObjectId } from './names.js'
import { looseObjectSize, offsetInIndex, packedObjectSize } from './object-size.js'
import { PackCache } from './pack-cache.js'
import type { CommitT, TreeT } from '../../schemas/git.js'

type Person = CommitT['author']
interface GitPerson { name: string, email: string, timestamp: number }
type ReadObject = Awaited<ReturnType<typeof git.readObject>>

const TREE_TYPES = new Set(['blob', 'tree', 'commit'])

function person (who: GitPerson): Person {
  return { name: who.name, email: who.email, date: new Date(who.timestamp * 1000).toISOString() }
}

function isNotFound (error: unknown): boolean {
  const code = (error as { code?: string }).code
  return code === 'NotFoundError' || code === 'ENOENT'
}

const refNotFound = (rev: string) => gitErrors.refNotFound({ rev })
const pathNotFound = (path: string) => gitErrors.pathNotFound({ path })

/** A parsed commit as the API shows it. */
export function commitView (oid: string, commit: { message: string, parent: string[], author: GitPerson, committer: GitPerson }): CommitT {
  const message = commit.message
  return { sha: oid, parents: commit.parent, title: message.split('\n', 1)[0], message, author: person(commit.author), committer: person(commit.committer) }
}

/**
 * Reads repositories from disk with isomorphic-git: refs, commits, history,
 * trees and blobs. It never writes; writes and diffs go through the git
 * binary. Objects read from packs go through the one PackCache, so a pack is
 * read, checked and indexed once rather than on every call.
 */
export class RepoReader {
  constructor (private readonly packs = new PackCache()) {}

  /** The isomorphic-git cache object of the repository's packs as they are now. */
  private async cache (gitdir: string): Promise<object> {
    return (await this.packs.of(gitdir)).cache
  }

  async isEmpty (gitdir: string): Promise<boolean> {
    try {
      await git.resolveRef({ fs, gitdir, ref: 'HEAD' })
      return false
    } catch (error) {
      if (isNotFound(error)) return true
      throw error
    }
  }

  /** The commit a revision names: refs first, as git does, then an object id, peeling annotated tags. */
  async resolveCommit (gitdir: string, rev: string): Promise<string> {
    let oid: string
    try {
      oid = await git.resolveRef({ fs, gitdir, ref: rev })
    } catch (error) {
      if (!isNotFound(error) || !isShortObjectId(rev)) throw isNotFound(error) ? refNotFound(rev) : error
      oid = await this.expand(gitdir, rev)
    }
    for (let depth = 0; depth < 10; depth++) {
      const object = await this.object(gitdir, oid, rev)
      if (object.type === 'commit') return oid
      if (object.type !== 'tag') break
      oid = (object.object as { object: string }).object
    }
    throw gitErrors.notACommit({ rev })
  }

  async commit (gitdir: string, oid: string): Promise<CommitT> {
    const { commit } = await this.readCommit(gitdir, oid)
    return commitView(oid, commit)
  }

  async readCommit (gitdir: string, oid: string): Promise<Awaited<ReturnType<typeof git.readCommit>>> {
    try {
      return await git.readCommit({ fs, gitdir, oid, cache: await this.cache(gitdir) })
    } catch (error) {
      if (isNotFound(error)) throw refNotFound(oid)
      throw gitErrors.notACommit({ rev: oid })
    }
  }

  async tree (gitdir: string, commit: string, path: string): Promise<TreeT> {
    let result: Awaited<ReturnType<typeof git.readTree>>
    try {
      result = await git.readTree({ fs, gitdir, cache: await this.cache(gitdir), oid: commit, ...(path === '' ? {} : { filepath: path }) })
    } catch (error) {
      if (isNotFound(error)) throw pathNotFound(path)
      throw gitErrors.notAFolder({ path })
    }
    const entries = result.tree
      .filter((entry) => TREE_TYPES.has(entry.type))
      .map((entry) => ({ name: entry.path, path: path === '' ? entry.path : `${path}/${entry.path}`, type: entry.type, mode: entry.mode, oid: entry.oid }))
      .sort((a, b) => (a.type === 'tree') !== (b.type === 'tree') ? (a.type === 'tree' ? -1 : 1) : a.name < b.name ? -1 : a.name > b.name ? 1 : 0)
    return { commit, path, entries }
  }

  /** The blob at `path` in a commit's tree: its object id, found without reading its content. */
  async blobId (gitdir: string, commit: string, path: string): Promise<string> {
    const slash = path.lastIndexOf('/')
    const folder = slash === -1 ? '' : path.slice(0, slash)
    const name = path.slice(slash + 1)
    const { entries } = await this.tree(gitdir, commit, folder).catch((error: unknown) => {
      throw gitErrors.notAFolder.is(error) ? pathNotFound(path) : error
    })
    const entry = entries.find((candidate) => candidate.name === name)
    if (entry === undefined) throw pathNotFound(path)
    if (entry.type !== 'blob') throw gitErrors.notAFile({ path, is: entry.type === 'tree' ? 'folder' : 'submodule' })
    return entry.oid
  }

  async blobContent (gitdir: string, oid: string): Promise<Buffer> {
    const { blob } = await git.readBlob({ fs, gitdir, oid, cache: await this.cache(gitdir) })
    return Buffer.from(blob.buffer, blob.byteOffset, blob.byteLength)
  }

  /** An object's size, from its header: the object itself is not read, however big. */
  async objectSize (gitdir: string, oid: string): Promise<number> {
    const loose = await looseObjectSize(gitdir, oid)
    if (loose !== null) return loose
    // A repack between listing the packs and reading one moves the object: the second look finds it in the new pack.
    for (let attempt = 1; ; attempt++) {
      const set = await this.packs.of(gitdir)
      try {
        for (const name of set.indexes) {
          const offset = offsetInIndex(await set.index(name), oid)
          if (offset !== null) return await packedObjectSize(join(gitdir, 'objects', 'pack', `${name.slice(0, -'.idx'.length)}.pack`), offset)
        }
        throw new Error(`No object ${oid} in ${gitdir}`)
      } catch (error) {
        if (attempt === 2 || (error as { code?: string }).code !== 'ENOENT') throw error
      }
    }
  }

  async branches (gitdir: string): Promise<Array<{ name: string, commit: string }>> {
    const names = await git.listBranches({ fs, gitdir })
    return await Promise.all(names.sort().map(async (name) => ({ name, commit: await git.resolveRef({ fs, gitdir, ref: `refs/heads/${name}` }) })))
  }

  /** The branch HEAD names, even when it does not exist yet (an empty repository). */
  async headBranch (gitdir: string): Promise<string | null> {
    const target = await git.resolveRef({ fs, gitdir, ref: 'HEAD', depth: 1 })
    return target.startsWith('refs/heads/') ? target.slice('refs/heads/'.length) : null
  }

  async refExists (gitdir: string, ref: string): Promise<boolean> {
    try {
      await git.resolveRef({ fs, gitdir, ref, depth: 1 })
      return true
    } catch (error) {
      if (isNotFound(error)) return false
      throw error
    }
  }

  /** The object a ref points at, without peeling. */
  async refTarget (gitdir: string, ref: string): Promise<string> {
    return await git.resolveRef({ fs, gitdir, ref })
  }

  async tags (gitdir: string): Promise<Array<{ name: string, commit: string, annotated: boolean, message: string | null, tagger: Person | null }>> {
    const names = (await git.listTags({ fs, gitdir })).sort()
    return await Promise.all(names.map(async (name) => await this.tag(gitdir, name)))
  }

  async tag (gitdir: string, name: string): Promise<{ name: string, commit: string, annotated: boolean, message: string | null, tagger: Person | null }> {
    const oid = await git.resolveRef({ fs, gitdir, ref: `refs/tags/${name}` })
    const object = await this.object(gitdir, oid, name)
    if (object.type !== 'tag') return { name, commit: oid, annotated: false, message: null, tagger: null }
    const tag = object.object as { message: string, tagger: GitPerson }
    return { name, commit: await this.resolveCommit(gitdir, oid), annotated: true, message: tag.message, tagger: person(tag.tagger) }
  }

  private async expand (gitdir: string, short: string): Promise<string> {
    try {
      return await git.expandOid({ fs, gitdir, oid: short, cache: await this.cache(gitdir) })
    } catch (error) {
      if ((error as { code?: string }).code === 'AmbiguousError') throw gitErrors.ambiguousRef({ short })
      throw refNotFound(short)
    }
  }

  private async object (gitdir: string, oid: string, rev: string): Promise<ReadObject> {
    try {
      return await git.readObject({ fs, gitdir, oid, format: 'parsed', cache: await this.cache(gitdir) })
    } catch (error) {
      if (isNotFound(error)) throw refNotFound(rev)
      throw error
    }
  }
}
