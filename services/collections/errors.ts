import { errorCatalogue, fieldIssue, type ErrorDetails } from '../platform/errors.js'

/**
 * The collections family's codes: collection definitions and the data API's
 * records over them (their rules, fields, filters, sorts and writes). File
 * codes are the files family's (services/files/errors.ts); a refusal by a
 * method's rule is `commonErrors.forbidden`.
 */
export const collectionErrors = errorCatalogue('collections', {
  invalidDefinition: {
    code: 'APP_INVALID_DEFINITION',
    status: 400,
    message: ({ path, why }: { path: string, why: string }) => `${path}: ${why}`,
    details: ({ path, why }) => fieldIssue(path, why),
    description: 'the definition breaks a rule of fields, indexes or methods; `details.fields` points at it'
  },
  reservedCollection: {
    code: 'APP_RESERVED_COLLECTION',
    status: 400,
    message: ({ why }: { why: string, issue: string }) => why,
    details: ({ issue }) => fieldIssue('name', issue),
    description: 'the name is reserved (`auth`, or starting with `_`), or `_users` cannot be dropped'
  },
  invalidFilter: {
    code: 'APP_INVALID_FILTER',
    status: 400,
    message: ({ path, why }: { path: string, why: string, field?: string }) => `${path}: ${why}`,
    details: ({ path, why, field }) => fieldIssue(path, why, field),
    description: 'the filter is not one the collection\'s fields take; `details.fields` points at it'
  },
  invalidSort: {
    code: 'APP_INVALID_SORT',
    status: 400,
    // `why` words the message when it says more than the issue.
    message: ({ issue, field, why }: { issue: string, field?: string, why?: string }) => why ?? (field === undefined ? `sort: ${issue}` : `sort: "${field}" ${issue}`),
    details: ({ issue, field }) => field === undefined ? undefined : fieldIssue('sort', issue, field),
    description: 'the sort names a field that is unknown, hidden or unsortable, names one twice, or has too many keys'
  },
  invalidFields: {
    code: 'APP_INVALID_FIELDS',
    status: 400,
    message: ({ field, issue }: { field: string, issue: string }) => `fields: "${field}" ${issue}`,
    details: ({ field, issue }) => fieldIssue('fields', issue, field),
    description: '`fields` names a field that is unknown or hidden from the caller'
  },
  invalidField: {
    code: 'APP_INVALID_FIELD',
    status: 400,
    message: ({ field, why }: { field: string, why: string }) => `${field}: ${why}`,
    details: ({ field, why }) => fieldIssue(field, why),
    description: 'a value does not meet its field\'s definition; `details.fields` names the field'
  },
  unknownField: {
    code: 'APP_UNKNOWN_FIELD',
    status: 400,
    message: ({ field }: { field: string }) => `${field}: not a field of this collection`,
    details: ({ field }) => fieldIssue(field, 'is not a field of this collection'),
    description: 'the body names a field the collection does not declare'
  },
  fieldRequired: {
    code: 'APP_FIELD_REQUIRED',
    status: 400,
    message: ({ field }: { field: string }) => `${field} is required`,
    details: ({ field }) => fieldIssue(field, 'is required'),
    description: 'a required field is missing'
  },
  invalidRelation: {
    code: 'APP_INVALID_RELATION',
    status: 400,
    message: ({ target }: { target: string }) => `A related record in "${target}" does not exist`,
    description: 'a relation field names a record that does not exist'
  },
  emptyUpdate: { code: 'APP_EMPTY_UPDATE', status: 400, message: 'set must change at least one field', description: '`set` changes no field' },
  filterRequired: {
    code: 'APP_FILTER_REQUIRED',
    status: 400,
    message: 'A bulk update or delete needs a filter with at least one clause that selects records; one that holds for every record by its form ({}, $exists on id) does not',
    description: 'a bulk write\'s filter holds for every record by its form'
  },
  scanLimit: {
    code: 'APP_SCAN_LIMIT',
    status: 400,
    message: ({ limit }: { limit: number }) => `No index serves this filter and this offset page would examine more than ${limit} records: page with cursor (nextCursor continues the scan) or declare an index on a filtered field`,
    details: ({ limit }) => ({ limit }),
    description: 'an offset page over an unindexed filter would examine too many records: page with the cursor'
  },
  readonlyField: {
    code: 'APP_READONLY_FIELD',
    status: 403,
    message: ({ field, issue, why }: { field: string, issue: string, why?: string }) => why ?? `${field} ${issue}`,
    details: ({ field, issue }) => fieldIssue(field, issue),
    description: 'the body writes a field the server sets, a file field, or one the method\'s callers may not write'
  },
  ruleCheckFailed: {
    code: 'APP_RULE_CHECK_FAILED',
    status: 403,
    message: ({ why }: { why: string, field: string, issue: string }) => why,
    details: ({ field, issue }) => fieldIssue(field, issue),
    description: 'the record does not meet the method\'s check (an owner field holding the caller, a field\'s value)'
  },
  collectionNotFound: {
    code: 'APP_COLLECTION_NOT_FOUND',
    status: 404,
    message: (params?: { name?: string, why?: string }) => params?.why ?? (params?.name === undefined ? 'Collection not found' : `Collection "${params.name}" not found`),
    description: 'no such collection in the project'
  },
  recordNotFound: { code: 'APP_RECORD_NOT_FOUND', status: 404, message: 'Record not found', description: 'no such record, or the method\'s rule hides it' },
  fieldNotFound: {
    code: 'APP_FIELD_NOT_FOUND',
    status: 404,
    message: ({ field }: { field: string }) => `"${field}" is not a file field of this collection`,
    details: ({ field }) => fieldIssue(field, 'is not a file field of this collection'),
    description: 'the path names no file field of the collection'
  },
  methodDisabled: {
    code: 'APP_METHOD_DISABLED',
    status: 405,
    message: ({ method }: { method: string }) => `The ${method} method is disabled on this collection`,
    description: 'the collection has this method disabled; Allow lists what the path takes'
  },
  collectionExists: {
    code: 'APP_COLLECTION_EXISTS',
    status: 409,
    message: ({ name }: { name: string }) => `A collection named "${name}" already exists in this project`,
    details: () => fieldIssue('name', 'is taken'),
    description: 'the project already has a collection of that name'
  },
  collectionReferenced: {
    code: 'APP_COLLECTION_REFERENCED',
    status: 409,
    message: ({ name, referencing }: { name: string, referencing: string[] }) =>
      `Collection "${name}" is the target of ${referencing.join(', ')}; change or remove those relation fields first`,
    details: ({ name, referencing }) => ({ fields: referencing.map((path: string) => ({ path, message: `is a relation to ${name}` })) }),
    description: 'other collections\' relation fields point at the collection'
  },
  definitionConflict: {
    code: 'APP_DEFINITION_CONFLICT',
    status: 409,
    message: ({ why }: { why: string, details?: ErrorDetails }) => why,
    details: ({ details }) => details,
    description: 'existing records would break the change (a unique index over duplicates, a new required field some lack, ' +
      'a stricter type, a field over values it would refuse), or an index not managed by the definition is in the way; nothing changed'
  },
  duplicateValue: {
    code: 'APP_DUPLICATE_VALUE',
    status: 409,
    message: ({ fields }: { fields: string[] }) => `Another record already has this ${fields.join(', ')}`,
    details: ({ fields }) => ({ fields: fields.map((path: string) => ({ path, message: 'is already taken' })) }),
    description: 'another record holds this value of a unique index; `details.fields` names it'
  },
  tooManyFiles: {
    code: 'APP_TOO_MANY_FILES',
    status: 409,
    message: ({ limit }: { limit: number }) => `The field holds at most ${limit} files`,
    details: ({ limit }) => ({ limit }),
    description: 'the file field holds as many files as it takes'
  },
  tooManyAffected: {
    code: 'APP_TOO_MANY_AFFECTED',
    status: 409,
    message: ({ limit }: { limit: number }) => `The filter matches more than ${limit} records; nothing was changed`,
    details: ({ limit }) => ({ limit }),
    description: 'the filter matches more records than `maxAffected`; nothing changed'
  },
  writeConflict: { code: 'APP_WRITE_CONFLICT', status: 409, message: 'The record kept changing; try again', description: 'the record kept changing under the write: try again' },
  versionMismatch: {
    code: 'APP_VERSION_MISMATCH',
    status: 412,
    message: (params?: { expected: number, actual: number }) =>
      params === undefined ? 'The record changed while it was being deleted' : `The record is at version ${params.actual}, not ${params.expected}`,
    details: (params) => params === undefined ? undefined : { expected: params.expected, actual: params.actual },
    description: 'the record is not at the If-Match version'
  },
  fileTypeNotAllowed: {
    code: 'APP_FILE_TYPE_NOT_ALLOWED',
    status: 415,
    message: ({ field, allowed, actual }: { field: string, allowed: string[], actual: string }) => `${field} takes ${allowed.join(', ')}; the content is ${actual}`,
    details: ({ field, allowed, actual }) => ({ ...fieldIssue(field, `does not take ${actual}`), actual, allowed }),
    description: 'the file\'s sniffed type is not one the field\'s `allowedTypes` takes'
  }
})
