import { createRequire } from 'node:module'
import type Docker from 'dockerode'

/**
 * The Docker Engine API client (Docker, or Podman's compatible service) and
 * what every part of the driver shares about it: the labels that find this
 * driver's images and containers again, and the engine's error shapes.
 */

export const LABELS = {
  driver: 'plinth.driver',
  app: 'plinth.app',
  deployment: 'plinth.deployment',
  artifact: 'plinth.artifact',
  instance: 'plinth.instance',
  healthPath: 'plinth.health-path',
  healthTimeoutMs: 'plinth.health-timeout-ms',
  scope: 'plinth.scope'
} as const

export const DRIVER_LABEL_VALUE = 'container'

/** dockerode is required on first use: it pulls in gRPC, protobufjs and ssh2 (~0.3 s of CPU), which only the container driver needs. */
const require = createRequire(import.meta.url)

export function connectEngine (socketPath: string): Docker {
  const Dockerode = require('dockerode') as typeof Docker
  return new Dockerode({ socketPath })
}

function statusCode (error: unknown): number | null {
  if (error === null || typeof error !== 'object' || !('statusCode' in error)) return null
  return typeof error.statusCode === 'number' ? error.statusCode : null
}

/** The engine answered 404: the container or image is already gone. */
export function isNotFound (error: unknown): boolean {
  return statusCode(error) === 404
}

/** 304 from start/stop: already in the asked state. */
export function isNotModified (error: unknown): boolean {
  return statusCode(error) === 304
}

export function errorMessage (error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}
