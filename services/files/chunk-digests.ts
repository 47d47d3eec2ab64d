import { createHash, type Hash } from 'node:crypto'

/**
 * SHA-256 of an upload taken as its chunks arrive, so completing a large
 * upload need not read it back. Chunks are hashed in index order; one that
 * arrives early waits in memory, within bounds, and past them the session
 * simply loses its running digest and complete hashes the staged bytes.
 *
 * A digest is only trusted when it covers every chunk write the session
 * counted: any rewrite, any write this process did not see (another
 * process, a restart) makes the counts differ. The caller checks that.
 */

const MAX_SESSIONS = 64
const MAX_PENDING_BYTES = 64 * 1024 * 1024

interface Running {
  hash: Hash
  /** The next chunk index the hash needs. */
  next: number
  /** Chunks that arrived ahead of `next`. */
  pending: Map<number, Buffer>
  /** Chunk writes fed in, early ones included. */
  writes: number
  /** Kept, bytes dropped, so later chunks of a session that lost its digest cost nothing. */
  lost: boolean
}

export class ChunkDigests {
  private readonly running = new Map<string, Running>()
  private pendingBytes = 0

  /**
   * Feeds one written chunk, the session's `write`-th: a digest starts only
   * with a session's first write, and a chunk index seen before ends it.
   */
  add (sessionId: string, index: number, bytes: Buffer, write: number): void {
    let digest = this.running.get(sessionId)
    if (digest === undefined) {
      if (this.running.size >= MAX_SESSIONS) this.forget(this.running.keys().next().value as string)
      // Joining late (evicted, restarted, another process wrote first) could never be trusted: remember that instead.
      digest = { hash: createHash('sha256'), next: 0, pending: new Map(), writes: 0, lost: write !== 1 }
      this.running.set(sessionId, digest)
    }
    if (digest.lost) return
    if (index < digest.next || digest.pending.has(index)) {
      this.lose(digest)
      return
    }
    digest.writes++
    if (index > digest.next) {
      if (this.pendingBytes + bytes.length > MAX_PENDING_BYTES) {
        this.lose(digest)
        return
      }
      // A copy: the caller may reuse its buffer once the chunk is written.
      digest.pending.set(index, Buffer.from(bytes))
      this.pendingBytes += bytes.length
      return
    }
    digest.hash.update(bytes)
    digest.next++
    for (let early = digest.pending.get(digest.next); early !== undefined; early = digest.pending.get(digest.next)) {
      digest.pending.delete(digest.next)
      this.pendingBytes -= early.length
      digest.hash.update(early)
      digest.next++
    }
  }

  /**
   * The hex digest when this process hashed all `chunkCount` chunks and the
   * session counted no other write (`writes`); null otherwise. Either way the
   * session's digest is gone afterwards.
   */
  take (sessionId: string, chunkCount: number, writes: number): string | null {
    const digest = this.running.get(sessionId)
    if (digest === undefined) return null
    const trusted = !digest.lost && digest.next === chunkCount && digest.writes === writes
    this.forget(sessionId)
    return trusted ? digest.hash.digest('hex') : null
  }

  forget (sessionId: string): void {
    const digest = this.running.get(sessionId)
    if (digest === undefined) return
    this.lose(digest)
    this.running.delete(sessionId)
  }

  private lose (digest: Running): void {
    for (const early of digest.pending.values()) this.pendingBytes -= early.length
    digest.pending.clear()
    digest.lost = true
  }
}
