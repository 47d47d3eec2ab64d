export { ProcessDriver, DEFAULT_BUILD_LIMITS, DEFAULT_RESTART_POLICY, type ProcessDriverOptions } from './driver.js'
export { probeSandbox, type SandboxHost, type SandboxProbeOptions } from './sandbox.js'
export type { RestartPolicy, SupervisorTiming } from './supervisor.js'
