import { Type, type Static } from '@sinclair/typebox'
import { GatewayInstructions } from './dns.js'
import { Created, Envelope } from './envelope.js'
import { DateTime, Deleted, Id } from './common.js'

/** Hostnames one app may carry. */
export const MAX_HOSTNAMES_PER_APP = 20
/** A certificate is renewed this long before it expires. */
export const CERTIFICATE_RENEW_BEFORE_DAYS = 30

const NullableDateTime = Type.Union([DateTime, Type.Null()])
const Hostname = Type.String({ minLength: 1, maxLength: 254, description: 'A host name such as `www.example.com`; case and one trailing dot do not matter', examples: ['www.example.com'] })

export const HostnameRecordCheck = Type.Object({
  name: Type.String({ description: 'The name asked', examples: ['_plinth-verify.www.example.com'] }),
  type: Type.Union([Type.Literal('A'), Type.Literal('AAAA'), Type.Literal('CNAME'), Type.Literal('ALIAS'), Type.Literal('TXT')]),
  purpose: Type.Union([Type.Literal('route'), Type.Literal('ownership')]),
  expected: Type.String({ description: 'What the record should hold (for `route`: the gateway\'s host name or one of its addresses)' }),
  found: Type.Array(Type.String(), { description: 'What the resolver answered for that name and type' }),
  ok: Type.Boolean(),
  problem: Type.Union([Type.String(), Type.Null()], { description: 'Why it is not right: missing, pointing elsewhere, or the resolver\'s failure' })
})

export const HostingHostname = Type.Object({
  id: Type.String(),
  appId: Type.String(),
  hostname: Type.String({ description: 'Lower case, without the trailing dot', examples: ['www.example.com'] }),
  status: Type.Union([Type.Literal('pending'), Type.Literal('verified')], { description: '`pending` until `verify` found the routing and ownership records; only verified hostnames are routed and get certificates' }),
  verifiedAt: NullableDateTime,
  lastCheck: Type.Union([Type.Object({
    at: DateTime,
    ok: Type.Boolean(),
    records: Type.Array(HostnameRecordCheck)
  }), Type.Null()], { description: 'The last verification: each record looked up and what was found' }),
  createdAt: DateTime,
  updatedAt: DateTime
}, { $id: 'HostingHostname' })

export const AcmeProblem = Type.Object({
  type: Type.String({ description: 'The ACME problem type (RFC 8555 §6.7), or `urn:plinth:acme:client` for a failure before the CA answered', examples: ['urn:ietf:params:acme:error:unauthorized'] }),
  detail: Type.String(),
  status: Type.Union([Type.Integer(), Type.Null()], { description: 'The HTTP status the CA gave with the problem' }),
  at: DateTime
})

export const HostingCertificate = Type.Object({
  hostname: Type.String(),
  appId: Type.String(),
  status: Type.Union([Type.Literal('pending'), Type.Literal('issued'), Type.Literal('failed')], { description: '`issued` while a valid certificate is served (a failed renewal keeps the old one, with `lastError`); `failed` when none could be issued' }),
  challenge: Type.Union([Type.Literal('http-01'), Type.Literal('dns-01')], { description: 'How the CA checked control of the name' }),
  issuer: Type.Union([Type.String(), Type.Null()]),
  notBefore: NullableDateTime,
  notAfter: NullableDateTime,
  renewAfter: NullableDateTime,
  issuedAt: NullableDateTime,
  lastError: Type.Union([AcmeProblem, Type.Null()], { description: 'The ACME problem of the last failed attempt' }),
  updatedAt: DateTime
}, { $id: 'HostingCertificate' })

export const BindHostnameBody = Type.Object({ hostname: Hostname }, { additionalProperties: false })
export const IssueCertificateBody = Type.Object({
  challenge: Type.Optional(Type.Union([Type.Literal('http-01'), Type.Literal('dns-01')], { description: 'Defaults to `dns-01` when one of the project\'s zones holds the hostname, else `http-01`' }))
}, { additionalProperties: false })
export const AppHostnamesParams = Type.Object({ projectId: Id, appId: Id })
export const HostnameParams = Type.Object({ projectId: Id, appId: Id, hostname: Hostname })

export const BoundHostname = Type.Object({
  hostname: Type.Ref(HostingHostname),
  instructions: GatewayInstructions
})

/** Each route's success answer; route-auth adds the refusals its declaration names. */
export const HostnameResponses = {
  list: { 200: Envelope(Type.Array(Type.Ref(HostingHostname))) },
  bound: { 201: Created(BoundHostname) },
  instructions: { 200: Envelope(BoundHostname) },
  verified: { 200: Envelope(Type.Ref(HostingHostname)) },
  deleted: { 200: Envelope(Deleted) },
  certificateList: { 200: Envelope(Type.Array(Type.Ref(HostingCertificate))) },
  certificateIssued: { 200: Envelope(Type.Ref(HostingCertificate)) }
}

export const hostingHostnameSchemas = [HostingHostname, HostingCertificate]

export type HostingHostnameT = Static<typeof HostingHostname>
export type HostnameRecordCheckT = Static<typeof HostnameRecordCheck>
export type HostingCertificateT = Static<typeof HostingCertificate>
export type AcmeProblemT = Static<typeof AcmeProblem>
export type BoundHostnameT = Static<typeof BoundHostname>
