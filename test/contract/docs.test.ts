import t from 'tap'
import { buildTestApp } from '../helper.js'

t.test('GET /docs is the reference over the same document, with nothing fetched from elsewhere', async (t) => {
  const app = await buildTestApp(t)
  for (const url of ['/docs', '/docs/']) {
    const page = await app.inject({ url })
    t.equal(page.statusCode, 200, url)
    t.match(page.headers['content-type'], /text\/html/)
    const csp = String(page.headers['content-security-policy'])
    t.match(csp, /default-src 'none'/, 'the page may load nothing its policy does not list')
    t.notMatch(csp, /https?:|validator/, 'and lists no other origin')
    const assets = [...page.body.matchAll(/(?:src|href)="([^"]+)"/g)].map((match) => match[1])
    t.ok(assets.length >= 4, 'the page names its scripts and styles')
    for (const asset of assets) {
      t.notMatch(asset, /^(https?:)?\/\//, `${asset} is served by this server`)
      const resolved = new URL(asset, `http://plinth.test${url}`).pathname
      t.equal((await app.inject({ url: resolved })).statusCode, 200, `${resolved} is there`)
    }
  }
  const initializer = await app.inject({ url: '/docs/static/swagger-initializer.js' })
  t.match(initializer.body, /validatorUrl: null/, 'no validator badge fetched from swagger.io')
  const served = await app.inject({ url: '/docs/json' })
  t.same(served.json(), app.swagger(), 'the page reads the generated document')
  t.notOk(Object.keys(app.swagger().paths ?? {}).some((path) => path.startsWith('/docs')), 'and the document does not list the page itself')
})
