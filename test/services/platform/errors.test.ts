import t from 'tap'
import { AppError, commonErrors, errorCatalogue, fieldIssue } from '../../../services/platform/errors.js'
import { dnsErrors } from '../../../services/dns/errors.js'

t.test('a catalogue entry makes the coded error from its typed parameters', async (t) => {
  const shapes = errorCatalogue('shapes', {
    fixed: { code: 'APP_TEST_FIXED', status: 404, message: 'Nothing here', description: 'nothing is there' },
    templated: {
      code: 'APP_TEST_TEMPLATED',
      status: 409,
      message: ({ name, limit }: { name: string, limit: number }) => `${name} holds at most ${limit}`,
      details: ({ limit }) => ({ limit }),
      description: 'it is full'
    },
    optional: {
      code: 'APP_TEST_OPTIONAL',
      status: 400,
      message: (where?: { path: string }) => where === undefined ? 'Bad' : `Bad at ${where.path}`,
      details: (where) => where === undefined ? undefined : fieldIssue(where.path, 'is bad'),
      description: 'something is bad'
    }
  })
  const fixed = shapes.fixed()
  t.ok(fixed instanceof AppError)
  t.match(fixed, { code: 'APP_TEST_FIXED', status: 404, message: 'Nothing here', details: undefined })
  t.match(shapes.templated({ name: 'box', limit: 3 }), { code: 'APP_TEST_TEMPLATED', status: 409, message: 'box holds at most 3', details: { limit: 3 } })
  t.match(shapes.optional(), { message: 'Bad', details: undefined })
  t.match(shapes.optional({ path: 'body.x' }), { message: 'Bad at body.x', details: { fields: [{ path: 'body.x', message: 'is bad' }] } })
  t.same([shapes.templated.code, shapes.templated.status, shapes.templated.description], ['APP_TEST_TEMPLATED', 409, 'it is full'], 'what a route declares: code, status and what it means')
  t.ok(shapes.fixed.is(fixed) && !shapes.templated.is(fixed) && !shapes.fixed.is(new Error('x')), 'is() tells its own code from others')
})

t.test('each code is declared once across every catalogue', async (t) => {
  t.throws(() => errorCatalogue('elsewhere', {
    again: { code: dnsErrors.zoneExists.code, status: 409, message: 'again', description: 'again' }
  }), /APP_DNS_ZONE_EXISTS is declared twice: dns\.zoneExists and elsewhere\.again/)
  t.throws(() => errorCatalogue('twins', {
    one: { code: 'APP_TEST_TWIN', status: 400, message: 'one', description: 'one' },
    two: { code: 'APP_TEST_TWIN', status: 400, message: 'two', description: 'two' }
  }), /APP_TEST_TWIN is declared twice/)
})

t.test('the shared catalogue holds what every family answers', async (t) => {
  t.match(commonErrors.forbidden({ permission: 'dns.manage' }), { status: 403, code: 'APP_FORBIDDEN', message: 'This needs the "dns.manage" permission', details: { permission: 'dns.manage' } })
  t.match(commonErrors.projectNotFound(), { status: 404, code: 'APP_PROJECT_NOT_FOUND' })
  t.match(commonErrors.rateLimited({ retryAfterSeconds: 7 }), { status: 429, details: { retryAfterSeconds: 7 } })
  for (const catalogue of [commonErrors, dnsErrors]) {
    for (const [name, entry] of Object.entries(catalogue)) {
      t.match(entry.code, /^APP_[A-Z0-9_]+$/, `${name}: APP_SCREAMING_SNAKE`)
      t.ok(entry.description.length > 0 && !entry.description.endsWith('.'), `${name}: a description the contract's list can show`)
    }
  }
})
