import { createSocket } from 'node:dgram'

/**
 * The ceiling for any DNS server on one Node thread: a dgram socket that sends
 * each query straight back marked as a response (QR set), doing no DNS work.
 */
const udp = createSocket('udp4')
udp.on('message', (message, remote) => {
  message[2] |= 0x80
  udp.send(message, remote.port, remote.address)
})
udp.on('error', () => {})
udp.bind(0, '127.0.0.1', () => { process.send?.({ dnsPort: udp.address().port }) })
process.once('SIGTERM', () => { udp.close(() => process.exit(0)) })
