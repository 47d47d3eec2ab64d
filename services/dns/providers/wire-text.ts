import type { RecordData } from '../changes.js'
import { canonicalContent, RECORD_TYPES, type RecordType } from '../content.js'
import { quote, splitStrings } from '../text.js'

/**
 * Record content in the zone-file form external providers exchange
 * (PowerDNS's `content`, Route 53's `Value`): names absolute with their
 * trailing dot, TXT as quoted 255-byte strings. Our canonical form is
 * read back with `canonicalContent`, which accepts both.
 */
export function providerContent (type: RecordType, content: string): string {
  const parts = content.split(' ')
  const fqdn = (name: string) => name === '.' ? '.' : `${name}.`
  switch (type) {
    case 'TXT': return splitStrings(content).map(quote).join(' ')
    case 'CNAME': case 'NS': return fqdn(content)
    case 'MX': return `${parts[0]} ${fqdn(parts[1])}`
    case 'SRV': return `${parts.slice(0, 3).join(' ')} ${fqdn(parts[3])}`
    case 'SOA': return `${fqdn(parts[0])} ${fqdn(parts[1])} ${parts.slice(2).join(' ')}`
    default: return content
  }
}

export function isServedType (type: string): type is RecordType {
  return (RECORD_TYPES as readonly string[]).includes(type)
}

/** A provider's record in our form, or null for a type we do not manage (PowerDNS's ALIAS, Route 53's alias targets). */
export function fromProvider (name: string, type: string, ttl: number, content: string): RecordData | null {
  if (!isServedType(type)) return null
  return { name: name.toLowerCase().replace(/\.$/, ''), type, ttl, content: canonicalContent(type, content) }
}
