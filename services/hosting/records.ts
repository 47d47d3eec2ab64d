import type { Artifact, RunningInstance } from './runtime.js'
import type { AppState, DeploymentState, InstanceState } from '../../schemas/hosting.js'

/** The hosting family's documents in the Store, shared by its services. */

export const APPS = 'hosting_apps'
export const DEPLOYMENTS = 'hosting_deployments'
export const INSTANCES = 'hosting_instances'

export type AppKind = 'container' | 'static'

export type GitSourceRecord = {
  repositoryId: string | null
  url: string | null
  branch: string
  subdirectory: string
  autoDeploy: boolean
  autoDeployPaused: boolean
  lastCommit: string | null
}

export type AppRecord = {
  _id: string
  projectId: string
  kind: AppKind
  name: string
  state: AppState
  suspended: boolean
  scaling: { instances: number, min: number, max: number }
  healthCheckPath: string
  spaFallback: boolean
  gitSource: GitSourceRecord | null
  liveDeploymentId: string | null
  createdAt: Date
  updatedAt: Date
}

export type DeploymentSource =
  | { type: 'upload', uploadId: string, fileId: string, sha256: string }
  | { type: 'git', repositoryId: string | null, url: string | null, branch: string | null, commit: string | null, subdirectory: string }
  | { type: 'rollback' }

export type DeploymentRecord = {
  _id: string
  appId: string
  projectId: string
  state: DeploymentState
  reason: string | null
  source: DeploymentSource
  trigger: 'api' | 'push' | 'rollback'
  artifact: Artifact | null
  rollbackOf: string | null
  /** Set by a cancel; the worker running it stops at its next step. */
  cancelRequested: boolean
  createdBy: string | null
  createdAt: Date
  startedAt: Date | null
  finishedAt: Date | null
  liveAt: Date | null
  /** The project variables it took when it released (services/hosting/project-variables.ts); absent before it did. */
  variables?: DeploymentVariables | null
}

/** A deployment's project variables: their names, and the whole list sealed under the master key. */
export type DeploymentVariables = { names: string[], sealed: string }

export type InstanceRecord = {
  _id: string
  appId: string
  projectId: string
  deploymentId: string
  state: InstanceState
  running: RunningInstance | null
  reason: string | null
  startedAt: Date | null
  stoppedAt: Date | null
}

/** Deployment states that end a deployment's work. */
export const FINISHED_DEPLOYMENT_STATES: DeploymentState[] = ['live', 'failed', 'build_failed', 'canceled', 'superseded']
