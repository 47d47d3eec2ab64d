import type { Route, RouteTable } from './routing.js'

/**
 * The gateway's route table: each app's route under every host it answers
 * to. The orchestration replaces an app's whole entry in one assignment, so
 * the gateway (which resolves synchronously) sees the old deployment or the
 * new one, never a mix. Rebuilt from the Store at start.
 */
export class HostRoutes implements RouteTable {
  private readonly byHost = new Map<string, Route>()
  private readonly hostsOf = new Map<string, string[]>()

  resolve (host: string): Route | null {
    return this.byHost.get(host) ?? null
  }

  /** Points every one of `hosts` at `route`, and drops hosts the app answered to before but not now. */
  set (route: Route, hosts: string[]): void {
    const wanted = hosts.map((host) => host.toLowerCase())
    for (const old of this.hostsOf.get(route.appId) ?? []) {
      if (!wanted.includes(old) && this.byHost.get(old)?.appId === route.appId) this.byHost.delete(old)
    }
    for (const host of wanted) this.byHost.set(host, route)
    this.hostsOf.set(route.appId, wanted)
  }

  /** The app's route as it is now, or null when it has none. */
  routeOf (appId: string): Route | null {
    const host = this.hostsOf.get(appId)?.[0]
    return host === undefined ? null : this.byHost.get(host) ?? null
  }

  hosts (appId: string): string[] {
    return this.hostsOf.get(appId) ?? []
  }

  remove (appId: string): void {
    for (const host of this.hostsOf.get(appId) ?? []) {
      if (this.byHost.get(host)?.appId === appId) this.byHost.delete(host)
    }
    this.hostsOf.delete(appId)
  }
}
