import { Type, type Static } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import type { Clock } from '../platform/clock.js'
import type { SignedLinks } from '../platform/signed-links.js'
import { fileErrors } from '../files/errors.js'
import type { DataCaller } from './access.js'
import type { FileTarget } from './record-files.js'

/**
 * Who a file link acts for: the caller who asked for it, with what made their
 * credential good (an end user's or a platform user's session epoch, a PAT's
 * id), so that using the link is calling as them, then.
 */
const LinkPrincipal = Type.Union([
  Type.Object({ kind: Type.Literal('anonymous') }, { additionalProperties: false }),
  Type.Object({ kind: Type.Literal('user'), id: Type.String(), epoch: Type.Integer() }, { additionalProperties: false }),
  Type.Object({ kind: Type.Literal('admin'), userId: Type.String(), epoch: Type.Integer() }, { additionalProperties: false }),
  Type.Object({ kind: Type.Literal('pat'), userId: Type.String(), keyId: Type.String(), scopes: Type.Optional(Type.Array(Type.String())) }, { additionalProperties: false })
])
type LinkPrincipal = Static<typeof LinkPrincipal>

/** What a link's query carries besides the file's path: whom it acts for, until when, and the server's signature. */
export interface FileLinkQuery { as: string, expires: number, signature: string }

/** How the credentials a link stands for are checked now; each answers null once the credential no longer holds. */
export interface LinkPrincipalPorts {
  /** The session epoch of the project's end user while they exist, are enabled and the project has auth on. */
  endUserEpoch: (projectId: string, userId: string) => Promise<number | null>
  /** The session epoch of a platform user while they exist. */
  platformEpoch: (userId: string) => Promise<number | null>
  /** Whether a user's PAT is still neither revoked nor expired. */
  patLive: (userId: string, keyId: string) => Promise<boolean>
  /** A platform user as the data API's admin caller, with their permissions in the project now (404 when none). */
  admin: (projectId: string, platform: { userId: string, scopes?: string[], keyId?: string }) => Promise<DataCaller>
}

function subjectOf (target: FileTarget, fileId: string, as: string): string {
  return ['file', target.projectId, target.table, target.id, target.field, fileId, as].join('\n')
}

/**
 * Signed links to one record file (as Supabase's signed URLs): the link names
 * the file, the caller it acts for and its expiry, under an HMAC only this
 * server makes, so `<img src>` works without an Authorization header. It
 * grants nothing of its own: using it is calling as its maker, whose
 * credential must still hold and whom the download rule, as it stands then,
 * must still let through (docs/data.md).
 */
export class FileLinks {
  constructor (private readonly links: SignedLinks, private readonly clock: Clock, private readonly ports: LinkPrincipalPorts) {}

  /** The query of a link to `fileId` acting for `caller`, valid `seconds` from now. */
  async sign (target: FileTarget, fileId: string, caller: DataCaller, seconds: number): Promise<FileLinkQuery & { expiresAt: Date }> {
    const as = Buffer.from(JSON.stringify(await this.principalOf(target.projectId, caller))).toString('base64url')
    const expires = Math.floor(this.clock.nowMs() / 1000) + seconds
    return { as, expires, signature: this.links.sign(subjectOf(target, fileId, as), expires), expiresAt: new Date(expires * 1000) }
  }

  /** The caller a link to `fileId` acts for, if this server signed it for that file, it has not expired and its maker's credential still holds. */
  async callerOf (target: FileTarget, fileId: string, query: FileLinkQuery): Promise<DataCaller> {
    const nowSeconds = Math.floor(this.clock.nowMs() / 1000)
    if (!this.links.verify(subjectOf(target, fileId, query.as), query.expires, query.signature, nowSeconds)) throw fileErrors.linkInvalid()
    let principal: unknown
    try { principal = JSON.parse(Buffer.from(query.as, 'base64url').toString('utf8')) } catch { throw fileErrors.linkInvalid() }
    if (!Value.Check(LinkPrincipal, principal)) throw fileErrors.linkInvalid()
    const { projectId } = target
    switch (principal.kind) {
      case 'anonymous': return { kind: 'anonymous' }
      case 'user':
        if (await this.ports.endUserEpoch(projectId, principal.id) !== principal.epoch) throw fileErrors.linkInvalid()
        return { kind: 'user', id: principal.id }
      case 'admin':
        if (await this.ports.platformEpoch(principal.userId) !== principal.epoch) throw fileErrors.linkInvalid()
        return await this.ports.admin(projectId, { userId: principal.userId })
      case 'pat':
        if (!await this.ports.patLive(principal.userId, principal.keyId)) throw fileErrors.linkInvalid()
        return await this.ports.admin(projectId, { userId: principal.userId, keyId: principal.keyId, ...(principal.scopes === undefined ? {} : { scopes: principal.scopes }) })
    }
  }

  private async principalOf (projectId: string, caller: DataCaller): Promise<LinkPrincipal> {
    if (caller.kind === 'anonymous') return { kind: 'anonymous' }
    // The caller's credential was checked against these a moment ago; null now means it ended in between.
    if (caller.kind === 'user') {
      const epoch = await this.ports.endUserEpoch(projectId, caller.id)
      if (epoch === null) throw fileErrors.linkInvalid()
      return { kind: 'user', id: caller.id, epoch }
    }
    if (caller.keyId !== undefined) return { kind: 'pat', userId: caller.userId, keyId: caller.keyId, ...(caller.scopes === undefined ? {} : { scopes: caller.scopes }) }
    const epoch = await this.ports.platformEpoch(caller.userId)
    if (epoch === null) throw fileErrors.linkInvalid()
    return { kind: 'admin', userId: caller.userId, epoch }
  }
}
