import { errorCatalogue, fieldIssue } from '../platform/errors.js'

const ZONE_FILE = 'body.zoneFile'

/** Every code the DNS family answers with, once: services throw `dnsErrors.name(params)`, routes list `dnsErrors.name`. */
export const dnsErrors = errorCatalogue('dns', {
  invalidName: {
    code: 'APP_DNS_INVALID_NAME',
    status: 400,
    message: ({ input, why }: { input: string, why: string, path: string }) => `"${input}" is not a valid domain name: ${why}`,
    details: ({ path, why }) => fieldIssue(path, why),
    description: 'a name is not a valid domain name (a zone needs two labels or more)'
  },
  nameOutsideZone: {
    code: 'APP_DNS_NAME_OUTSIDE_ZONE',
    status: 400,
    message: ({ input, zone }: { input: string, zone: string, path: string }) => `"${input}" is not inside the zone ${zone}`,
    details: ({ path, zone }) => fieldIssue(path, `must be ${zone} or a name under it`),
    description: 'a record\'s name lies outside its zone'
  },
  invalidContent: {
    code: 'APP_DNS_INVALID_CONTENT',
    status: 400,
    message: ({ type, content, why }: { type: string, content: string, why: string, path: string }) => `Invalid ${type} content "${content.slice(0, 100)}": ${why}`,
    details: ({ path, why }) => fieldIssue(path, why),
    description: 'a record\'s content is not valid for its type'
  },
  invalidTtl: {
    code: 'APP_DNS_INVALID_TTL',
    status: 400,
    message: ({ min, max }: { min: number, max: number, path: string }) => `TTL must be a whole number of seconds from ${min} to ${max}`,
    details: ({ path, min, max }) => fieldIssue(path, `must be from ${min} to ${max}`),
    description: 'a TTL is outside the allowed range'
  },
  soaManaged: {
    code: 'APP_DNS_SOA_MANAGED',
    status: 400,
    message: (_: { path: string }) => 'The zone\'s SOA record is kept by its provider: its serial goes up on every change',
    details: ({ path }) => fieldIssue(path, 'SOA records cannot be created, changed or deleted'),
    description: 'the change touches the SOA record, which the provider keeps'
  },
  emptyChange: { code: 'APP_DNS_EMPTY_CHANGE', status: 400, message: 'The change creates, updates and deletes nothing', description: 'the change holds nothing to do' },
  tooManyChanges: {
    code: 'APP_DNS_TOO_MANY_CHANGES',
    status: 400,
    message: ({ limit }: { limit: number }) => `At most ${limit} changes in one request`,
    details: ({ limit }) => ({ limit }),
    description: 'the change holds more changes than one request may'
  },
  tooManyRecords: {
    code: 'APP_DNS_TOO_MANY_RECORDS',
    status: 400,
    message: ({ limit }: { limit: number }) => `A zone holds at most ${limit} records`,
    details: ({ limit }) => ({ limit }),
    description: 'the zone would hold more records than a zone may'
  },
  zoneFileInvalid: {
    code: 'APP_DNS_ZONE_FILE_INVALID',
    status: 400,
    message: ({ line, why }: { line?: number, why: string, limit?: number }) => line === undefined ? why : `Zone file line ${line}: ${why}`,
    details: ({ line, why, limit }) => limit !== undefined ? { limit } : fieldIssue(ZONE_FILE, line === undefined ? why : `line ${line}: ${why}`),
    description: 'a line of the zone file cannot be read, or a record in it breaks the records\' rules; the message names the line'
  },
  providerInvalid: {
    code: 'APP_DNS_PROVIDER_INVALID',
    status: 400,
    message: ({ problem }: { problem: string, path: string, issue: string }) => problem,
    details: ({ path, issue }) => fieldIssue(path, issue),
    description: 'the provider\'s kind lacks its endpoint or a credential, or the endpoint is not a plain http(s) URL'
  },
  providerEndpointInternal: {
    code: 'APP_DNS_PROVIDER_ENDPOINT_INTERNAL',
    status: 400,
    message: ({ why }: { why: string }) => `The endpoint may not be called: ${why}`,
    details: () => fieldIssue('body.endpoint', 'is an internal address'),
    description: 'the endpoint is an internal address the operator has not opened (DNS_PROVIDER_PRIVATE_HOSTS)'
  },
  providerNotFound: { code: 'APP_DNS_PROVIDER_NOT_FOUND', status: 404, message: 'DNS provider not found', description: 'no such provider in the project' },
  zoneNotFound: { code: 'APP_DNS_ZONE_NOT_FOUND', status: 404, message: 'Zone not found', description: 'no such zone in the project' },
  recordNotFound: {
    code: 'APP_DNS_RECORD_NOT_FOUND',
    status: 404,
    message: (where?: { id: string, zone: string, path: string }) => where === undefined ? 'Record not found' : `No record ${where.id} in the zone ${where.zone}`,
    details: (where) => where === undefined ? undefined : fieldIssue(where.path, 'no such record in this zone'),
    description: 'no such record in the zone'
  },
  zoneExists: {
    code: 'APP_DNS_ZONE_EXISTS',
    status: 409,
    message: ({ name, holder, said }: { name: string, holder: string, said?: string }) => `${holder} already holds the zone ${name}${said === undefined ? '' : `: ${said}`}`,
    description: 'the provider already holds a zone of that name'
  },
  zoneOverlap: {
    code: 'APP_DNS_ZONE_OVERLAP',
    status: 409,
    message: ({ name, other }: { name: string, other: string }) => `${name} overlaps the zone ${other} of another project on the built-in server`,
    description: 'the name lies inside or around another project\'s zone on the built-in server'
  },
  zoneReserved: {
    code: 'APP_DNS_ZONE_RESERVED',
    status: 409,
    message: ({ name, reserved }: { name: string, reserved: string }) => `${name} would answer for ${reserved}, which this server keeps for itself`,
    description: 'the name is, holds or lies under one of the server\'s own names (its nameservers, gateway, public host, apps domain)'
  },
  tooManyZones: {
    code: 'APP_DNS_TOO_MANY_ZONES',
    status: 409,
    message: ({ limit }: { limit: number }) => `A project holds at most ${limit} zones`,
    details: ({ limit }) => ({ limit }),
    description: 'the project holds as many zones as it may'
  },
  tooManyProviders: {
    code: 'APP_DNS_TOO_MANY_PROVIDERS',
    status: 409,
    message: ({ limit }: { limit: number }) => `A project holds at most ${limit} DNS providers`,
    details: ({ limit }) => ({ limit }),
    description: 'the project holds as many providers as it may'
  },
  providerInUse: {
    code: 'APP_DNS_PROVIDER_IN_USE',
    status: 409,
    message: ({ count }: { count: number }) => `${count} zone(s) are on this provider; delete them first`,
    details: ({ count }) => ({ count }),
    description: 'zones are still on the provider'
  },
  recordExists: {
    code: 'APP_DNS_RECORD_EXISTS',
    status: 409,
    message: ({ record }: { record: string, path: string }) => `The zone already has ${record}`,
    details: ({ path }) => fieldIssue(path, 'the same record exists'),
    description: 'the zone already has the same record'
  },
  cnameConflict: {
    code: 'APP_DNS_CNAME_CONFLICT',
    status: 409,
    message: ({ name, besides }: { name: string, besides: string | null }) => besides === null
      ? `The apex ${name} cannot hold a CNAME: it holds the zone's SOA and NS records`
      : `${name} has a CNAME, which must be the only record at its name (it would also hold ${besides})`,
    description: 'a CNAME would stand beside other records at its name, or at the apex'
  },
  concurrentChange: {
    code: 'APP_DNS_CONCURRENT_CHANGE',
    status: 409,
    message: 'The zone kept changing while this change was applied; try again',
    description: 'the zone kept changing under the change; try again'
  },
  zoneNotHosted: {
    code: 'APP_DNS_ZONE_NOT_HOSTED',
    status: 409,
    message: ({ hostname }: { hostname: string }) => `No zone of this project holds ${hostname}: create the records at its DNS provider`,
    description: 'no zone of the project holds the hostname'
  },
  gatewayNotConfigured: {
    code: 'APP_DNS_GATEWAY_NOT_CONFIGURED',
    status: 409,
    message: ({ missing }: { missing: 'host name' | 'addresses' }) => `The gateway has no ${missing} configured (${missing === 'host name' ? 'DNS_GATEWAY_HOST' : 'DNS_GATEWAY_IPV4 or DNS_GATEWAY_IPV6'})`,
    description: 'the server has no gateway host name or addresses to point at (DNS_GATEWAY_HOST, DNS_GATEWAY_IPV4, DNS_GATEWAY_IPV6)'
  },
  providerFailed: {
    code: 'APP_DNS_PROVIDER_FAILED',
    status: 502,
    message: ({ reason }: { reason: string }) => reason,
    description: 'the zone\'s provider could not be reached or refused; the message says why'
  }
})
