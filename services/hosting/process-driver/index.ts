export { ProcessDriver, DEFAULT_BUILD_LIMITS, type ProcessDriverOptions } from './driver.js'
export { probeSandbox, type SandboxHost, type SandboxProbeOptions } from './sandbox.js'
export type { SupervisorTiming } from './supervisor.js'
