import t from 'tap'
import { signV4 } from '../../../../services/dns/providers/sigv4.js'

// AWS's published Signature Version 4 examples, with their documented example credentials.
const credentials = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' }
const at = new Date(Date.UTC(2015, 7, 30, 12, 36, 0))

t.test('the get-vanilla case of the SigV4 test suite', async (t) => {
  const headers = signV4({ method: 'GET', url: new URL('https://example.amazonaws.com/'), headers: {}, body: '' }, credentials, { region: 'us-east-1', service: 'service' }, at)
  t.equal(headers.authorization, 'AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31')
  t.equal(headers['x-amz-date'], '20150830T123600Z')
})

t.test('the IAM ListUsers example of the signing guide', async (t) => {
  const headers = signV4({
    method: 'GET', url: new URL('https://iam.amazonaws.com/?Action=ListUsers&Version=2010-05-08'), headers: { 'Content-Type': 'application/x-www-form-urlencoded; charset=utf-8' }, body: ''
  }, credentials, { region: 'us-east-1', service: 'iam' }, at)
  t.equal(headers.authorization, 'AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/iam/aws4_request, SignedHeaders=content-type;host;x-amz-date, Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7')
})
