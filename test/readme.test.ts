import t from 'tap'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { PERMISSION_NAMES } from '../services/orgs/catalogue.js'

const ROOT = new URL('..', import.meta.url).pathname
/** The README and the pages it links to, one per family: what a reader takes as the documentation. */
const PAGES = new Map([
  'README.md',
  ...readdirSync(join(ROOT, 'docs')).filter((file) => file.endsWith('.md')).map((file) => `docs/${file}`)
].map((page) => [page, readFileSync(join(ROOT, page), 'utf8')]))
/** The page that lists the permission catalogue. */
const CATALOGUE_PAGE = 'docs/organizations.md'

function sources (dir: string): string[] {
  return readdirSync(join(ROOT, dir), { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts'))
    .map((file) => readFileSync(join(ROOT, dir, file), 'utf8'))
}

/**
 * The catalogue lists the permissions of families still to come, so they
 * need only use them. A family is built once code outside the catalogue asks
 * for one of its permissions; until then the documentation may name it only
 * as not built yet.
 */
t.test('the documentation describes no permission family as available before its routes exist', async (t) => {
  const code = ['routes', 'plugins', 'services'].flatMap(sources).filter((text) => !text.includes('export const PERMISSIONS = {')).join('\n')
  const families = [...new Set(PERMISSION_NAMES.map((name) => name.split('.')[0]))]
  const asked = (family: string): boolean => PERMISSION_NAMES.some((name) => name.startsWith(`${family}.`) && (code.includes(`'${name}'`) || code.includes(`"${name}"`)))
  const unbuilt = families.filter((family) => !asked(family))
  t.ok(families.filter(asked).includes('dns'), 'a built family counts as built')
  // Paragraphs and list items: what a reader takes in as one statement.
  const paragraphs = (page: string): string[] => (PAGES.get(page) ?? '').split(/\n(?=- |\n)/)
  for (const family of unbuilt) {
    t.ok(paragraphs(CATALOGUE_PAGE).some((paragraph) => paragraph.includes(`\`${family}.`)), `${CATALOGUE_PAGE} lists ${family}.* with the catalogue`)
    for (const page of PAGES.keys()) {
      for (const paragraph of paragraphs(page).filter((paragraph) => paragraph.includes(`\`${family}.`))) {
        t.match(paragraph, /not built yet/, `where ${page} names ${family}.*, it says the family is not built yet`)
      }
    }
  }
})
