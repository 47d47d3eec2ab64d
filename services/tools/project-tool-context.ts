import { platformDataCaller, type DataCaller } from '../collections/access.js'
import type { CollectionDefinitions } from '../collections/definitions.js'
import type { Records } from '../collections/records.js'
import type { DnsServices } from '../dns/index.js'
import type { GitServices } from '../git/index.js'
import type { MergeRequestServices } from '../git/merge-requests/index.js'
import type { HostingServices } from '../hosting/index.js'
import type { TrackerServices } from '../tracker/index.js'
import type { ContextOf, ToolAccess, ToolCaller } from './registry.js'
import { trackerToolContext, type TrackerToolContext } from './tracker-tool-context.js'

/** The services the project's tools call: each family's own, the very ones its REST routes call. */
export interface ProjectToolServices {
  tracker: TrackerServices
  collections: { definitions: CollectionDefinitions, records: Records }
  git: Pick<GitServices, 'access' | 'repositories' | 'history'>
  gitMergeRequests: Pick<MergeRequestServices, 'mergeRequests' | 'comments'>
  dns: Pick<DnsServices, 'zones' | 'records'>
  hosting: Pick<HostingServices, 'apps' | 'deployments' | 'sources' | 'logs'>
}

/**
 * What every tool of the one registry runs with: the tracker's context (its
 * tools read `tracker`, `actor`, `scope`), the caller with the access the
 * registry read for this call, and the other families' services.
 */
export interface ProjectToolContext extends TrackerToolContext {
  caller: ToolCaller
  access: ToolAccess
  services: ProjectToolServices
  /** The caller as the data API resolves a platform user: rules do not apply, `records.read`/`records.write` do (plugins/data-caller.ts). */
  dataCaller: DataCaller
}

export function projectToolContext (services: ProjectToolServices): ContextOf<ProjectToolContext> {
  const tracker = trackerToolContext(services.tracker)
  return (caller, access) => ({
    ...tracker(caller, access),
    caller,
    access,
    services,
    dataCaller: platformDataCaller(caller, access.permissions)
  })
}
