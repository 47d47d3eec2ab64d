import t from 'tap'
import { classifyEntry, decodeDocument, encodeDocument, parseEntry, RepositoryEntrySchema } from '../../../services/backup/project-archive.js'

t.test('entry paths: the layout\'s, and nothing else', async (t) => {
  const kinds: Array<[string, unknown]> = [
    ['project.json', { kind: 'project' }],
    ['manifest.json', { kind: 'manifest' }],
    ['collections/posts.json', { kind: 'collection', name: 'posts' }],
    ['collections/_users.json', { kind: 'collection', name: '_users' }],
    ['records/posts.jsonl', { kind: 'records', name: 'posts' }],
    ['files/posts/r1/f/abc', { kind: 'file', table: 'posts', recordId: 'r1', field: 'f', fileId: 'abc' }],
    ['git/site.v2.json', { kind: 'repository', slug: 'site.v2' }],
    ['git/site.bundle', { kind: 'bundle', slug: 'site' }]
  ]
  for (const [path, kind] of kinds) t.same(classifyEntry(path), kind, path)
  const refused = [
    '../project.json', '/project.json', 'collections/../project.json', 'collections/Posts.json', 'records/posts.json',
    'files/posts/r1/f', 'files/posts/r1/f/a/b', 'files/posts/../f/a', 'files/posts/r 1/f/a', 'git/.json', 'git/x.git.json',
    'git/hooks/post-receive', 'hooks/post-receive', 'project.json/x', ''
  ]
  for (const path of refused) {
    t.throws(() => classifyEntry(path), { code: 'APP_PROJECT_ARCHIVE_INVALID', message: /which is not an entry a project export writes/ }, path)
  }
})

t.test('documents keep their dates through a line of JSON', async (t) => {
  const doc = { _id: 'a', at: new Date('2026-01-02T03:04:05.678Z'), nested: [{ when: new Date(0) }], text: 'x', n: 1, none: null }
  const back = decodeDocument(encodeDocument(doc)) as typeof doc
  t.same(back, doc)
  t.ok(back.at instanceof Date && back.nested[0].when instanceof Date)
  t.same(decodeDocument('{"v":{"$date":"2026-01-01T00:00:00Z","other":1}}'), { v: { $date: '2026-01-01T00:00:00Z', other: 1 } }, 'only a lone $date is a date')
  t.throws(() => decodeDocument('{"v":{"$date":"not a date"}}'), /is not a date/)
})

t.test('a JSON entry is refused naming the entry and its wrong field', async (t) => {
  t.throws(() => parseEntry(RepositoryEntrySchema, '{', 'git/a.json'), { message: /git\/a\.json is not JSON/ })
  t.throws(() => parseEntry(RepositoryEntrySchema, JSON.stringify({ slug: 'a', name: 'A', description: '', defaultBranch: 'main', visibility: 'secret' }), 'git/a.json'),
    { code: 'APP_PROJECT_ARCHIVE_INVALID', message: /git\/a\.json is not what a project export writes: its visibility is wrong/ })
})
