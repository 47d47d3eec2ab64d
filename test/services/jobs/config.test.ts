import t from 'tap'
import { Value } from '@sinclair/typebox/value'
import { ConfigError } from '../../../services/platform/config-env.js'
import { JobsConfig, parseJobsConfig } from '../../../services/jobs/config.js'

t.test('the job worker\'s slots: defaults, values, and a bad value names its variable', async (t) => {
  t.same(parseJobsConfig({}), { slots: 2, longSlots: 2 })
  const set = parseJobsConfig({ JOB_WORKER_SLOTS: '8', JOB_WORKER_LONG_SLOTS: '1' })
  t.same(set, { slots: 8, longSlots: 1 })
  t.ok(Value.Check(JobsConfig, set))
  for (const variable of ['JOB_WORKER_SLOTS', 'JOB_WORKER_LONG_SLOTS']) {
    const error = (() => { try { parseJobsConfig({ [variable]: '0' }) } catch (caught) { return caught } })()
    t.ok(error instanceof ConfigError && error.variable === variable, `${variable}=0 is refused, naming it`)
  }
})
