import t from 'tap'
import {
  BSONRegExp, MongoBulkWriteError, MongoInvalidArgumentError, MongoNetworkError, MongoNetworkTimeoutError, MongoNotConnectedError, MongoServerError,
  MongoServerSelectionError, MongoTopologyClosedError
} from 'mongodb'
import {
  DocumentTooDeepError, DocumentTooLargeError, DuplicateKeyError, IndexConflictError, IndexNotFoundError, InvalidCollectionNameError, InvalidDocumentError,
  InvalidIndexError, InvalidUpdateError, QueryError, QueryTimeoutError, StoreUnavailableError
} from '../../../services/store/errors.js'
import { translate, type Operation } from '../../../services/store/mongo/translate.js'
import { redactedUrl } from '../../../services/store/mongo/connect.js'
import { portableQuery } from '../../../services/store/mongo/portable.js'
import { clientOptions, deploymentProblem } from '../../../services/store/mongo/deployment.js'

/**
 * The MongoDB engine's pure parts, on the driver's own error classes: how
 * driver and server errors become the Store's typed errors, how patterns are
 * sent, what the deployment check refuses. The engine talking to a server is
 * tested through the wire-level double (mongodb-double.test.ts) and, where
 * MONGODB_URL is set, against a real deployment (mongodb.test.ts).
 */

const caught = (run: () => unknown): unknown => {
  try { run() } catch (error) { return error }
  return null
}

t.test('driver and server errors become the Store\'s typed errors', async (t) => {
  const errmsg = 'E11000 duplicate key error collection: plinth.users index: email_1 dup key: { email: "a@x" }'
  const single = caught(() => translate(new MongoServerError({ code: 11000, errmsg, keyValue: { email: 'a@x' } }), 'users')) as DuplicateKeyError
  t.ok(single instanceof DuplicateKeyError)
  t.same([single.collection, single.index, single.keyValue, single.status, single.code], ['users', 'email_1', { email: 'a@x' }, 409, 'APP_DUPLICATE_KEY'])

  // insertMany's error: the keyValue lives on the first write error, not on the error itself.
  const writeError = { code: 11000, index: 1, errmsg, err: { code: 11000, index: 1, errmsg, keyValue: { email: 'a@x' } } }
  const bulk = new MongoBulkWriteError({ message: errmsg, code: 11000, writeErrors: [writeError] } as never, {} as never)
  const fromBulk = caught(() => translate(bulk, 'users')) as DuplicateKeyError
  t.ok(fromBulk instanceof DuplicateKeyError, 'a bulk write duplicate')
  t.same([fromBulk.index, fromBulk.keyValue], ['email_1', { email: 'a@x' }], 'keeps the index and keyValue')

  const unavailable: Array<[string, Error]> = [
    ['a network error', new MongoNetworkError('connection reset')],
    ['a network timeout', new MongoNetworkTimeoutError('timed out')],
    ['no server selectable', new MongoServerSelectionError('Server selection timed out after 30000 ms', {} as never)],
    ['a closed client', new MongoNotConnectedError('not connected')],
    ['a closed topology', new MongoTopologyClosedError()],
    ['a primary stepping down', new MongoServerError({ code: 11602, errmsg: 'InterruptedDueToReplStateChange' })],
    ['not primary', new MongoServerError({ code: 10107, errmsg: 'not primary' })],
    ['a retryable write error', new MongoServerError({ code: 1, errmsg: 'x', errorLabels: ['RetryableWriteError'] })],
    ['a transaction that kept conflicting', new MongoServerError({ code: 112, errmsg: 'WriteConflict', errorLabels: ['TransientTransactionError'] })]
  ]
  for (const [name, error] of unavailable) {
    const mapped = caught(() => translate(error, 'c'))
    t.ok(mapped instanceof StoreUnavailableError, name)
    t.same([(mapped as StoreUnavailableError).status, (mapped as StoreUnavailableError).code, (mapped as StoreUnavailableError).details], [503, 'APP_STORE_UNAVAILABLE', { retryAfterSeconds: 5 }], `${name}: 503 with Retry-After`)
    t.equal((mapped as Error).cause, error, `${name}: the driver's error is kept as the cause, for the log`)
  }

  const typed: Array<[string, Error, abstract new (...args: any[]) => Error, string]> = [
    ['IndexNotFound', new MongoServerError({ code: 27, errmsg: 'index not found with name [by_code]' }), IndexNotFoundError, 'APP_INDEX_NOT_FOUND'],
    ['IndexOptionsConflict', new MongoServerError({ code: 85, errmsg: 'Index already exists with a different name' }), IndexConflictError, 'APP_INDEX_CONFLICT'],
    ['IndexKeySpecsConflict', new MongoServerError({ code: 86, errmsg: 'An existing index has the same name' }), IndexConflictError, 'APP_INDEX_CONFLICT'],
    ['CannotCreateIndex', new MongoServerError({ code: 67, errmsg: 'add index fails, too many indexes for plinth.c' }), InvalidIndexError, 'APP_INVALID_INDEX'],
    ['CannotIndexParallelArrays', new MongoServerError({ code: 171, errmsg: 'cannot index parallel arrays [b] [a]' }), InvalidDocumentError, 'APP_INVALID_DOCUMENT'],
    ['MaxTimeMSExpired', new MongoServerError({ code: 50, errmsg: 'operation exceeded time limit' }), QueryTimeoutError, 'APP_QUERY_TIMEOUT'],
    ['ImmutableField', new MongoServerError({ code: 66, errmsg: "Performing an update on the path '_id' would modify the immutable field '_id'" }), InvalidUpdateError, 'APP_INVALID_UPDATE'],
    ['InvalidNamespace', new MongoServerError({ code: 73, errmsg: 'Invalid collection name: plinth.a$b' }), InvalidCollectionNameError, 'APP_INVALID_COLLECTION_NAME'],
    ['BSONObjectTooLarge', new MongoServerError({ code: 10334, errmsg: 'object to insert too large' }), DocumentTooLargeError, 'APP_DOCUMENT_TOO_LARGE'],
    ['an update result past 16 MiB', new MongoServerError({ code: 17419, errmsg: 'Resulting document after update is larger than 16777216' }), DocumentTooLargeError, 'APP_DOCUMENT_TOO_LARGE'],
    ['an upsert past 16 MiB', new MongoServerError({ code: 17420, errmsg: 'Document to upsert is larger than 16777216' }), DocumentTooLargeError, 'APP_DOCUMENT_TOO_LARGE'],
    ['the driver measuring a document', new MongoInvalidArgumentError('Document is larger than the maximum size 16777216'), DocumentTooLargeError, 'APP_DOCUMENT_TOO_LARGE'],
    ['Overflow (nesting)', new MongoServerError({ code: 15, errmsg: 'too much nesting' }), DocumentTooDeepError, 'APP_DOCUMENT_TOO_DEEP']
  ]
  for (const [name, error, type, code] of typed) {
    const mapped = caught(() => translate(error, 'c')) as { code?: string, message?: string }
    t.ok(mapped instanceof type, `${name} is a ${type.name}`)
    t.equal(mapped.code, code, name)
    t.notMatch(mapped.message ?? '', /plinth\./, `${name}: the server's namespace is not told`)
  }
  t.match((caught(() => translate(new MongoServerError({ code: 27, errmsg: 'index not found with name [by_code]' }), 'c')) as Error).message, /'by_code'/)

  // BadValue and TypeMismatch mean a bad filter on a query, an update that cannot apply on an update.
  const byOperation: Array<[number, Operation, abstract new (...args: any[]) => Error, string]> = [
    [2, 'query', QueryError, 'APP_INVALID_QUERY'],
    [14, 'query', QueryError, 'APP_INVALID_QUERY'],
    [2, 'update', InvalidUpdateError, 'APP_INVALID_UPDATE'],
    [14, 'update', InvalidUpdateError, 'APP_INVALID_UPDATE'],
    [2, 'insert', InvalidDocumentError, 'APP_INVALID_DOCUMENT']
  ]
  for (const [code, operation, type, appCode] of byOperation) {
    const mapped = caught(() => translate(new MongoServerError({ code, errmsg: 'BadValue or TypeMismatch' }), 'c', operation)) as { code?: string }
    t.ok(mapped instanceof type && mapped.code === appCode, `server code ${code} on ${operation}: ${appCode}`)
  }
  t.equal((caught(() => translate(new MongoServerError({ code: 2, errmsg: 'x' }), 'c', 'query')) as QueryError).path, 'filter', 'a query\'s BadValue points at the filter')

  // The driver keeps a bulk write error's message and document, not the server's keyValue.
  const dupmsg = 'E11000 duplicate key error collection: plinth.users index: org_1_email_1 dup key: { org: "o1", profile.email: "a@x" }'
  const dropped = new MongoBulkWriteError({ message: dupmsg, code: 11000, writeErrors: [{ code: 11000, index: 0, errmsg: dupmsg, err: { index: 0, code: 11000, errmsg: dupmsg, op: { _id: 'u', org: 'o1', profile: { email: 'a@x' } } } }] } as never, {} as never)
  const fromMessage = caught(() => translate(dropped, 'users')) as DuplicateKeyError
  t.same([fromMessage.index, fromMessage.keyValue], ['org_1_email_1', { org: 'o1', 'profile.email': 'a@x' }], 'a bulk duplicate\'s key is read from the message\'s fields and the document')

  const bug = new TypeError('a bug')
  t.equal(caught(() => translate(bug, 'c')), bug, 'anything else passes through, to be a 500 with its stack in the log')
  const other = new MongoServerError({ code: 13, errmsg: 'Unauthorized' })
  t.equal(caught(() => translate(other, 'c')), other, 'an unmapped server error passes through')
})

t.test('patterns reach the server in their portable form, as BSON regular expressions', async (t) => {
  const filter = {
    name: /^a$/i,
    code: { $regex: 'x # comment\n y$', $options: 'x' },
    tags: { $in: ['plain', /\s/] },
    $or: [{ body: { $not: /b$/ } }, { items: { $elemMatch: { label: { $regex: /^c/, $options: '' } } } }],
    untouched: { nested: [1, 2] }
  }
  const sent = portableQuery(filter) as any
  t.ok(sent.name instanceof BSONRegExp)
  t.same([sent.name.pattern, sent.name.options], ['^a\\z', 'i'], '$ without m is end of text')
  t.same([sent.code.$regex.pattern, sent.code.$regex.options, sent.code.$options], ['xy\\z', '', undefined], 'x is applied here and dropped')
  t.same([sent.tags.$in[0], sent.tags.$in[1].pattern], ['plain', '[\\t\\n\\f\\r ]'], '\\s is spelled out')
  t.equal(sent.$or[0].body.$not.pattern, 'b\\z')
  t.equal(sent.$or[1].items.$elemMatch.label.$regex.pattern, '^c')
  t.equal(sent.untouched, filter.untouched, 'a branch without patterns is passed as it came')
  t.same(filter.name, /^a$/i, "the caller's filter is not changed")
  const plain = { a: 1, b: { $in: [1, 2] } }
  t.equal(portableQuery(plain), plain, 'a filter without patterns is not copied')
  t.same((portableQuery({ $set: { a: 1 }, $pull: { tags: /x$/m } }, 'update') as any).$pull.tags.pattern, 'x$', 'with m, $ is left to mean end of line')
  const lines = (portableQuery({ s: { $regex: '^$|[^a]', $options: 'm' } }) as any).s.$regex
  t.same([lines.pattern, lines.options], ['(?:^|(?<=\\n)\\z)$|[^a]', 'm'], "with m, PCRE is told that ^ also matches after a final newline, as RE2's does (a class's ^ is left alone)")
})

t.test('the deployment check and the client options', async (t) => {
  t.match(deploymentProblem({ maxWireVersion: 21 }), /standalone MongoDB server; Plinth needs a replica set or a sharded cluster/)
  t.match(deploymentProblem({ maxWireVersion: 21 }), /--replSet/, 'and says how to make one for development')
  t.equal(deploymentProblem({ setName: 'rs0', maxWireVersion: 21 }), null, 'a replica set')
  t.equal(deploymentProblem({ msg: 'isdbgrid', maxWireVersion: 21 }), null, 'a mongos')
  t.match(deploymentProblem({ setName: 'rs0', maxWireVersion: 9 }), /MongoDB 5\.0 or newer/, 'MongoDB 4.4 is too old')
  t.same(clientOptions('mongodb://db/plinth'), { ignoreUndefined: true, serverSelectionTimeoutMS: 30_000, retryWrites: true, retryReads: true })
  t.same(clientOptions('mongodb://a,b/?replicaSet=rs0&serverSelectionTimeoutMS=60000&retryWrites=false'), { ignoreUndefined: true, retryReads: true }, 'what MONGODB_URL sets wins')
  t.equal(redactedUrl('mongodb://app:s3cret@db1,db2/plinth?replicaSet=rs0'), 'mongodb://app:***@db1,db2/plinth?replicaSet=rs0', 'messages never show the password')
  t.equal(redactedUrl('mongodb+srv://cluster0.example.net/'), 'mongodb+srv://cluster0.example.net/')
})
