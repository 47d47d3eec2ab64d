import { createHash, type Hash } from 'node:crypto'
import { setImmediate as nextTurn } from 'node:timers/promises'

/**
 * SHA-256 of an upload taken as its chunks arrive, so completing a large
 * upload need not read it back. Chunks are hashed in index order; one that
 * arrives early waits in memory, within bounds, and past them the session
 * simply loses its running digest and complete hashes the staged bytes.
 *
 * Hashing goes in slices with a turn of the event loop between them, so it
 * runs alongside the chunk's disk write and other requests' I/O instead of
 * holding the thread for a whole chunk.
 *
 * A digest is only trusted when it covers every chunk write the session
 * counted: any rewrite, any write this process did not see (another
 * process, a restart) makes the counts differ. The caller checks that, and
 * drops the digest of a session whose write failed.
 */

const MAX_SESSIONS = 64
const MAX_PENDING_BYTES = 64 * 1024 * 1024
const SLICE_BYTES = 1024 * 1024

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
  /** Settles once every chunk handed to the hash so far is in it. */
  hashed: Promise<void>
}

export class ChunkDigests {
  private readonly running = new Map<string, Running>()
  private pendingBytes = 0

  /**
   * Feeds one chunk being written, of a session that had counted
   * `writtenBefore` writes when the chunk began: a digest starts only with a
   * session nothing was written to yet, and a chunk index seen before ends it.
   * Settles once `bytes` are no longer needed (hashed, or copied to wait).
   */
  async add (sessionId: string, index: number, bytes: Buffer, writtenBefore: number): Promise<void> {
    let digest = this.running.get(sessionId)
    if (digest === undefined) {
      if (this.running.size >= MAX_SESSIONS) this.forget(this.running.keys().next().value as string)
      // Joining late (evicted, restarted, another process wrote first) could never be trusted: remember that instead.
      digest = { hash: createHash('sha256'), next: 0, pending: new Map(), writes: 0, lost: writtenBefore !== 0, hashed: Promise.resolve() }
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
    // The order is fixed here, synchronously; the slices follow it on one chain per session.
    const queued = [bytes]
    digest.next++
    for (let early = digest.pending.get(digest.next); early !== undefined; early = digest.pending.get(digest.next)) {
      digest.pending.delete(digest.next)
      this.pendingBytes -= early.length
      queued.push(early)
      digest.next++
    }
    const running = digest
    digest.hashed = digest.hashed.then(async () => { for (const chunk of queued) await this.hashInSlices(running, chunk) })
    await digest.hashed
  }

  /**
   * The hex digest when this process hashed all `chunkCount` chunks and the
   * session counted no other write (`writes`); null otherwise. Either way the
   * session's digest is gone afterwards.
   */
  async take (sessionId: string, chunkCount: number, writes: number): Promise<string | null> {
    const digest = this.running.get(sessionId)
    if (digest === undefined) return null
    this.running.delete(sessionId)
    await digest.hashed
    const trusted = !digest.lost && digest.next === chunkCount && digest.writes === writes
    this.lose(digest)
    return trusted ? digest.hash.digest('hex') : null
  }

  forget (sessionId: string): void {
    const digest = this.running.get(sessionId)
    if (digest === undefined) return
    this.lose(digest)
    this.running.delete(sessionId)
  }

  private async hashInSlices (digest: Running, chunk: Buffer): Promise<void> {
    for (let start = 0; start < chunk.length && !digest.lost; start += SLICE_BYTES) {
      if (start > 0) await nextTurn()
      digest.hash.update(chunk.subarray(start, start + SLICE_BYTES))
    }
  }

  private lose (digest: Running): void {
    for (const early of digest.pending.values()) this.pendingBytes -= early.length
    digest.pending.clear()
    digest.lost = true
  }
}
