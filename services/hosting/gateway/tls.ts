import { createSecureContext, type SecureContext } from 'node:tls'
import type { CertificateSource } from '../routing.js'
import { BoundedMap } from '../../cache/bounded-map.js'
import { routeHost } from './host.js'

/** Certificates whose parsed context is kept; a renewed certificate is new text, hence a new entry, and the old one ages out. */
const CONTEXTS_KEPT = 1024

type SniDone = (error: Error | null, context?: SecureContext) => void

/**
 * Picks the certificate for a TLS handshake by its server name (SNI). A
 * name without a certificate (or with one that does not load) gets the
 * listener's default context, which holds none, so the client receives a
 * handshake-failure alert: the gateway has no certificate to present for
 * hosts it does not know.
 */
export class SniCertificates {
  private readonly contexts = new BoundedMap<string, SecureContext>(CONTEXTS_KEPT)

  constructor (private readonly certificates: CertificateSource) {}

  readonly callback = (servername: string, done: SniDone): void => {
    const host = routeHost(servername)
    const pair = host === null ? null : this.certificates.certificateFor(host)
    if (pair === null) {
      done(null)
      return
    }
    let context: SecureContext | undefined
    try {
      // Keyed by the certificate's text: a certificate names its public key, so the same text always pairs with the same key.
      context = this.contexts.remember(pair.cert, () => createSecureContext({ key: pair.key, cert: pair.cert }))
    } catch {
      context = undefined
    }
    done(null, context)
  }
}
