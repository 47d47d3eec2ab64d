import t from 'tap'
import { embeddedIpv4, internalKind } from '../../../services/outbound/internal-addresses.js'

t.test('every range that is not globally reachable is named, public addresses are not', async (t) => {
  const table: Array<[string, string | null]> = [
    ['0.0.0.0', 'unspecified'], ['0.1.2.3', 'unspecified'],
    ['127.0.0.1', 'loopback'], ['127.255.255.254', 'loopback'], ['::1', 'loopback'],
    ['10.0.0.1', 'private'], ['172.16.0.1', 'private'], ['172.31.255.255', 'private'], ['192.168.1.1', 'private'],
    ['100.64.0.1', 'carrier-grade NAT'], ['100.127.255.255', 'carrier-grade NAT'],
    ['169.254.169.254', 'link-local'], ['fe80::1', 'link-local'], ['febf::1', 'link-local'],
    ['fc00::1', 'unique-local'], ['fd12:3456::1', 'unique-local'],
    ['224.0.0.1', 'multicast'], ['239.255.255.250', 'multicast'], ['ff02::1', 'multicast'],
    ['192.0.2.1', 'documentation'], ['198.51.100.7', 'documentation'], ['203.0.113.9', 'documentation'], ['2001:db8::1', 'documentation'], ['3fff::1', 'documentation'],
    ['192.0.0.8', 'reserved'], ['192.88.99.1', 'reserved'], ['198.18.0.1', 'reserved'], ['198.19.255.255', 'reserved'], ['240.0.0.1', 'reserved'], ['255.255.255.255', 'reserved'],
    ['::', 'unspecified'], ['::7f00:1', 'reserved'], ['100::1', 'reserved'], ['2001::1', 'reserved'], ['2001:1ff::1', 'reserved'], ['5f00::1', 'reserved'], ['fec0::1', 'reserved'], ['64:ff9b:1::1', 'reserved'],
    // IPv6 forms that reach an IPv4 address are judged by it.
    ['fe80::1%eth0', 'link-local'], ['::ffff:127.0.0.1%lo', 'loopback'], ['::1%1', 'loopback'],
    ['::ffff:127.0.0.1', 'loopback'], ['::ffff:7f00:1', 'loopback'], ['0:0:0:0:0:ffff:a9fe:a9fe', 'link-local'], ['::FFFF:10.0.0.1', 'private'],
    ['64:ff9b::a00:1', 'private'], ['64:ff9b::127.0.0.1', 'loopback'], ['2002:7f00:1::', 'loopback'], ['2002:a9fe:a9fe::1', 'link-local'],
    // Public.
    ['8.8.8.8', null], ['1.1.1.1', null], ['172.32.0.1', null], ['172.15.255.255', null], ['100.128.0.1', null], ['169.255.0.1', null], ['223.255.255.255', null], ['11.0.0.1', null],
    ['2606:4700:4700::1111', null], ['2a00:1450:4001::200e', null], ['2001:200::1', null], ['::ffff:8.8.8.8', null], ['64:ff9b::808:808', null], ['2002:808:808::1', null]
  ]
  for (const [address, kind] of table) t.equal(internalKind(address), kind, address)
  t.throws(() => internalKind('localhost'), TypeError, 'a name is not an address')
  t.equal(embeddedIpv4('2606:4700:4700::1111'), null)
  t.equal(embeddedIpv4('::ffff:1.2.3.4'), '1.2.3.4')
})
