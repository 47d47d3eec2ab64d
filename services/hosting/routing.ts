/**
 * What the gateway asks on every request: where a Host goes. The
 * orchestration keeps the table current (a deploy going live, a scale, a
 * suspend, a hostname verified); the gateway only reads it, synchronously,
 * and reports what it served.
 */

export interface Upstream {
  instanceId: string
  host: string
  port: number
}

export type Route =
  | { kind: 'app', appId: string, projectId: string, suspended: boolean, upstreams: Upstream[] }
  | {
    kind: 'static'
    appId: string
    projectId: string
    suspended: boolean
    deploymentId: string
    /** The deployment's immutable tree; switching deployments swaps this value, never the files under it. */
    root: string
    /** Answer unknown paths without an extension with /index.html (single-page apps). */
    spaFallback: boolean
  }

export interface RouteTable {
  /** `host` is lower-case, without port or trailing dot. */
  resolve: (host: string) => Route | null
}

/** One request the gateway answered, for metrics and usage. */
export interface ServedRequest {
  appId: string
  instanceId: string | null
  status: number
  durationMs: number
  bytesOut: number
}

export interface ServedRequestSink {
  record: (served: ServedRequest) => void
}

/** Certificates the gateway presents over TLS, chosen by SNI. */
export interface CertificateSource {
  certificateFor: (host: string) => { key: string, cert: string } | null
}

/** Answers to ACME HTTP-01 challenges, served at /.well-known/acme-challenge/:token on the plain-HTTP port. */
export interface ChallengeSource {
  keyAuthorization: (token: string) => string | null
}
