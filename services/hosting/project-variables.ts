import type { SecretBox } from '../platform/crypto.js'
import type { Store, StoreCollection } from '../store/types.js'
import { APPS, DEPLOYMENTS, type AppRecord, type DeploymentRecord, type DeploymentVariables } from './records.js'
import type { Timeline } from './timeline.js'
import { sealedAt, type SealedValues } from '../platform/reseal.js'

/** One project variable as its owner hands it over: opened, for an instance's environment. */
export interface ProjectVariable { key: string, value: string, secret: boolean }

/** Where the project's variables come from (the auxiliary area's, docs/auxiliary.md#variables). */
export interface ProjectVariableSource {
  environment: (projectId: string) => Promise<ProjectVariable[]>
}

const sealedFor = (deploymentId: string): string => `hosting-deployment-variables:${deploymentId}`

/** The project variables each deployment took, sealed under the master key, for the re-seal job. */
export const sealedDeploymentVariables: SealedValues = {
  collection: DEPLOYMENTS,
  filter: { variables: { $ne: null } },
  values: (doc) => sealedAt(doc, 'variables.sealed', sealedFor(doc._id as string))
}

/**
 * The project variables a deployment runs with. A deployment takes them when
 * it releases, sealed onto its record, so every instance it ever starts
 * (scaling, a restart, an unsuspend) has the same values, and a change to
 * the variables reaches an app only with its next deployment. The variables
 * are the auxiliary area's, registered later than hosting: it hands its
 * source in with `use`, and tells of each change with `changed`.
 */
export class ProjectEnvironment {
  private source: ProjectVariableSource | null = null
  private readonly apps: StoreCollection<AppRecord>

  constructor (store: Store, private readonly deps: { box: SecretBox, timeline: Timeline }) {
    this.apps = store.collection<AppRecord>(APPS)
  }

  use (source: ProjectVariableSource): void {
    if (this.source !== null) throw new Error('project variables have a source already')
    this.source = source
  }

  /**
   * What a deployment about to release takes, and the timeline entry saying
   * which (names only, and which of them the app's own secrets override).
   */
  async take (app: AppRecord, deployment: DeploymentRecord, secretNames: readonly string[]): Promise<DeploymentVariables> {
    const variables = this.source === null ? [] : await this.source.environment(app.projectId)
    const names = variables.map((variable) => variable.key)
    if (names.length > 0) {
      const overridden = names.filter((name) => secretNames.includes(name))
      const message = `Deployment ${deployment._id} takes the project variables ${names.join(', ')}` +
        (overridden.length === 0 ? '' : `; the app's own secrets override ${overridden.join(', ')}`)
      await this.deps.timeline.add(app, 'deployment.variables', message, deployment._id)
    }
    return { names, sealed: this.deps.box.seal(JSON.stringify(variables), sealedFor(deployment._id)) }
  }

  /** The variables a deployment took; none for one released before it took any. */
  open (deployment: DeploymentRecord): ProjectVariable[] {
    if (deployment.variables === undefined || deployment.variables === null) return []
    return JSON.parse(this.deps.box.open(deployment.variables.sealed, sealedFor(deployment._id))) as ProjectVariable[]
  }

  /**
   * A variable changed: every app of the project with a running deployment
   * says so on its timeline, since that deployment keeps what it took until
   * the next one.
   */
  async changed (projectId: string, change: string): Promise<void> {
    const running = await this.apps.find({ projectId, kind: 'container', liveDeploymentId: { $ne: null } }).toArray()
    for (const app of running) {
      await this.deps.timeline.add(app, 'variables.changed', `${change}; the running deployment ${app.liveDeploymentId as string} keeps the values it took until the next deploy`, app.liveDeploymentId)
    }
  }
}
