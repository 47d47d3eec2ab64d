import { Type, type Static } from '@sinclair/typebox'
import { Created, Envelope } from './envelope.js'
import { DateTime, Deleted, Id } from './common.js'

export const DNS_RECORD_TYPES = ['A', 'AAAA', 'CNAME', 'TXT', 'MX', 'NS', 'SOA', 'SRV', 'CAA'] as const
export const DNS_MIN_TTL = 30
export const DNS_MAX_TTL = 604_800
export const DNS_MAX_CHANGES = 1000

const DomainName = Type.String({ minLength: 1, maxLength: 254, description: 'A domain name; case and one trailing dot do not matter' })

const RecordType = Type.Union(DNS_RECORD_TYPES.map((type) => Type.Literal(type)), { description: 'SOA records are kept by the provider and only read' })

export const Zone = Type.Object({
  id: Type.String(),
  name: Type.String({ description: 'Lower case, without the trailing dot', examples: ['example.com'] }),
  providerId: Type.String({ description: '`builtin` for the built-in server, else a configured provider\'s id' }),
  providerKind: Type.Union([Type.Literal('builtin'), Type.Literal('powerdns'), Type.Literal('cloudflare'), Type.Literal('route53')]),
  nameservers: Type.Array(Type.String(), { description: 'The names to delegate the zone to at its registrar' }),
  createdAt: DateTime,
  updatedAt: DateTime
}, { $id: 'DnsZone' })

export const DnsRecord = Type.Object({
  id: Type.String({ description: 'Derived from the zone, name, type and content: changing the content gives a new id' }),
  zoneId: Type.String(),
  name: Type.String({ description: 'Absolute, lower case, without the trailing dot', examples: ['www.example.com'] }),
  type: RecordType,
  ttl: Type.Integer({ description: 'Seconds; one name and type share one TTL' }),
  content: Type.String({ description: 'Canonical presentation form: `192.0.2.1`, `10 mail.example.com`, `0 issue "letsencrypt.org"`, a TXT value unquoted', examples: ['192.0.2.1'] })
}, { $id: 'DnsRecord' })

export const DnsProvider = Type.Object({
  id: Type.String({ description: '`builtin` for the built-in server' }),
  name: Type.String(),
  kind: Type.Union([Type.Literal('builtin'), Type.Literal('powerdns'), Type.Literal('cloudflare'), Type.Literal('route53')]),
  endpoint: Type.Union([Type.String(), Type.Null()], { description: 'The provider API\'s base URL' }),
  serverId: Type.Union([Type.String(), Type.Null()], { description: 'PowerDNS: the server id in `/api/v1/servers/:serverId`' }),
  accountId: Type.Union([Type.String(), Type.Null()], { description: 'Cloudflare: the account new zones go to' }),
  hasCredentials: Type.Boolean({ description: 'Credentials are sealed at rest and never returned' }),
  createdAt: DateTime,
  updatedAt: DateTime
}, { $id: 'DnsProvider' })

export const ProviderTest = Type.Object({
  ok: Type.Boolean(),
  message: Type.String({ description: 'What the provider said, or why it could not be reached' })
})

export const CreateProviderBody = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 100 }),
  kind: Type.Union([Type.Literal('powerdns'), Type.Literal('cloudflare'), Type.Literal('route53')]),
  endpoint: Type.Optional(Type.String({ minLength: 1, maxLength: 2048, description: 'The API\'s base URL: required for PowerDNS (`http://pdns.internal:8081`); Cloudflare defaults to https://api.cloudflare.com/client/v4, Route 53 to https://route53.amazonaws.com' })),
  serverId: Type.Optional(Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9_.-]+$', description: 'PowerDNS server id; defaults to `localhost`' })),
  accountId: Type.Optional(Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9]+$', description: 'Cloudflare account id, needed to create zones' })),
  credentials: Type.Object({
    apiKey: Type.Optional(Type.String({ minLength: 1, maxLength: 512, description: 'PowerDNS: the `api-key`, sent as X-API-Key' })),
    apiToken: Type.Optional(Type.String({ minLength: 1, maxLength: 512, description: 'Cloudflare: an API token with Zone and DNS edit rights' })),
    accessKeyId: Type.Optional(Type.String({ minLength: 1, maxLength: 128, description: 'Route 53: an IAM access key id' })),
    secretAccessKey: Type.Optional(Type.String({ minLength: 1, maxLength: 512, description: 'Route 53: its secret access key' }))
  }, { additionalProperties: false, description: 'Sealed at rest; never returned' })
}, { additionalProperties: false })

export const GatewayInstructions = Type.Object({
  hostname: Type.String(),
  apex: Type.Boolean({ description: 'Whether the hostname is its zone\'s apex (which cannot hold a CNAME)' }),
  hostedHere: Type.Boolean({ description: 'Whether one of this project\'s zones holds the hostname, so `apply` can create the records' }),
  zone: Type.Union([Type.Object({ id: Type.String(), name: Type.String(), providerId: Type.String(), providerKind: Type.String() }), Type.Null()]),
  records: Type.Array(Type.Object({
    name: Type.String(),
    type: Type.Union([Type.Literal('A'), Type.Literal('AAAA'), Type.Literal('CNAME'), Type.Literal('ALIAS'), Type.Literal('TXT')], { description: 'ALIAS: an apex alias (ANAME, CNAME flattening) where the provider has one' }),
    content: Type.String(),
    ttl: Type.Integer(),
    purpose: Type.Union([Type.Literal('route'), Type.Literal('ownership')], { description: '`route` points the hostname at the gateway; `ownership` proves the project\'s claim' }),
    present: Type.Optional(Type.Boolean({ description: 'When hosted here: whether the zone already has it' }))
  })),
  acmeChallengeName: Type.String({ description: 'Where an ACME DNS-01 challenge TXT goes for this hostname' })
})
export const GatewayQuery = Type.Object({ hostname: Type.String({ minLength: 1, maxLength: 254 }) }, { additionalProperties: false })
export const GatewayApplyBody = Type.Object({ hostname: Type.String({ minLength: 1, maxLength: 254 }) }, { additionalProperties: false })

export const ProjectDnsParams = Type.Object({ projectId: Id })
export const ProviderParams = Type.Object({ projectId: Id, providerId: Id })
export const ZoneParams = Type.Object({ projectId: Id, zoneId: Id })
export const RecordParams = Type.Object({ projectId: Id, recordId: Id })

export const CreateZoneBody = Type.Object({
  name: DomainName,
  providerId: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'Defaults to `builtin`' }))
}, { additionalProperties: false })

export const DNS_MAX_ZONE_FILE_BYTES = 512 * 1024

export const ImportZoneBody = Type.Object({
  zoneFile: Type.String({ minLength: 1, maxLength: DNS_MAX_ZONE_FILE_BYTES, description: 'An RFC 1035 master file: $ORIGIN, $TTL, @, relative names, parentheses, comments and quoted strings' }),
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 254, description: 'The zone\'s name; defaults to the file\'s first $ORIGIN' })),
  providerId: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'Defaults to `builtin`' }))
}, { additionalProperties: false })
export const ZoneFile = Type.Object({
  name: Type.String(),
  zoneFile: Type.String({ description: 'The zone as an RFC 1035 master file, names relative to $ORIGIN' })
})
/** The media type of a master file (RFC 4027). */
export const ZONE_FILE_TYPE = 'text/dns'
export const ExportZoneQuery = Type.Object({
  format: Type.Optional(Type.Union([Type.Literal('json'), Type.Literal('text')], { description: '`text` answers the master file itself, as `Accept: text/dns` does; `json` (the default) the envelope' }))
}, { additionalProperties: false })

const RecordFields = {
  name: Type.String({ minLength: 1, maxLength: 254, description: '`@` for the apex, a name relative to the zone (`www`), or absolute (`www.example.com` or `www.example.com.`); `*` as the first label is a wildcard' }),
  type: RecordType,
  ttl: Type.Optional(Type.Integer({ minimum: DNS_MIN_TTL, maximum: DNS_MAX_TTL, description: 'Seconds; sets the TTL of every record of this name and type. Defaults to theirs, else 3600' })),
  content: Type.String({ minLength: 1, maxLength: 8000, description: 'The record data in zone-file form; TXT as plain text or quoted strings' })
}
export const RecordBody = Type.Object(RecordFields, { additionalProperties: false })
export const CreateRecordBody = Type.Object({ zoneId: Id, ...RecordFields }, { additionalProperties: false })
export const ListRecordsQuery = Type.Object({
  zoneId: Id,
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 254, description: 'Only records of this absolute name' })),
  type: Type.Optional(RecordType)
}, { additionalProperties: false })
export const BulkChangeBody = Type.Object({
  zoneId: Id,
  create: Type.Optional(Type.Array(RecordBody, { maxItems: DNS_MAX_CHANGES })),
  update: Type.Optional(Type.Array(Type.Object({ id: Id, ...RecordFields }, { additionalProperties: false }), { maxItems: DNS_MAX_CHANGES })),
  delete: Type.Optional(Type.Array(Id, { maxItems: DNS_MAX_CHANGES, description: 'Ids of records to delete' }))
}, { additionalProperties: false })
export const BulkChangeResult = Type.Object({
  written: Type.Array(Type.Ref(DnsRecord), { description: 'The records updated, then those created, in the order asked' }),
  deleted: Type.Array(Type.String())
})

/** Each route's success answer; its error answers come from the codes it declares (`config.errors`). */
export const DnsResponses = {
  gateway: { 200: Envelope(GatewayInstructions) },
  providerList: { 200: Envelope(Type.Array(Type.Ref(DnsProvider))) },
  providerCreated: { 201: Created(Type.Ref(DnsProvider)) },
  provider: { 200: Envelope(Type.Ref(DnsProvider)) },
  providerTest: { 200: Envelope(ProviderTest) },
  zoneList: { 200: Envelope(Type.Array(Type.Ref(Zone))) },
  zoneCreated: { 201: Created(Type.Ref(Zone)) },
  zone: { 200: Envelope(Type.Ref(Zone)) },
  zoneFile: {
    200: {
      description: 'The envelope holding the zone file (the default, for API clients), or with `Accept: text/dns` or `?format=text` the master file itself, as a download',
      headers: { 'Content-Disposition': { type: 'string', description: 'With the master file: `attachment; filename="<zone>.zone"`' } },
      content: {
        'application/json': { schema: Envelope(ZoneFile) },
        [ZONE_FILE_TYPE]: { schema: { type: 'string', format: 'binary', description: 'An RFC 1035 master file, UTF-8' } }
      }
    }
  },
  deleted: { 200: Envelope(Deleted) },
  recordList: { 200: Envelope(Type.Array(Type.Ref(DnsRecord))) },
  record: { 200: Envelope(Type.Ref(DnsRecord)) },
  recordCreated: { 201: Created(Type.Ref(DnsRecord)) },
  bulk: { 200: Envelope(BulkChangeResult) }
}

export const dnsSchemas = [Zone, DnsRecord, DnsProvider]
export type ZoneT = Static<typeof Zone>
export type DnsRecordT = Static<typeof DnsRecord>
export type DnsProviderT = Static<typeof DnsProvider>
export type ProviderTestT = Static<typeof ProviderTest>
export type GatewayInstructionsT = Static<typeof GatewayInstructions>
export type CreateRecordBodyT = Static<typeof CreateRecordBody>
