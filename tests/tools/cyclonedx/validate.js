#!/usr/bin/env node
// Judges a CycloneDX document the way its consumers do: the CycloneDX library's strict JSON
// validator for spec 1.6 (the schema with no unknown properties anywhere), then every purl
// through packageurl-js. Prints "valid" and exits 0, or prints what is wrong and exits 1.
// Usage: node validate.js FILE.cdx.json  (tests/bundle/report_test.cpp)
'use strict'

const fs = require('node:fs')
const CDX = require('@cyclonedx/cyclonedx-library')
const { PackageURL } = require('packageurl-js')

async function main (file) {
  const text = fs.readFileSync(file, 'utf8')
  const validator = new CDX.Validation.JsonStrictValidator(CDX.Spec.Version.v1dot6)
  const errors = await validator.validate(text)
  if (errors !== null) {
    console.log('invalid against CycloneDX 1.6 (strict):')
    console.log(JSON.stringify(errors, null, 2))
    return 1
  }
  const bom = JSON.parse(text)
  const bad = []
  const visit = (components) => {
    for (const component of components ?? []) {
      if (component.purl !== undefined) {
        try {
          PackageURL.fromString(component.purl)
        } catch (error) {
          bad.push(`${component['bom-ref']}: purl ${component.purl}: ${error.message}`)
        }
      }
      visit(component.components)
    }
  }
  visit(bom.components)
  if (bad.length > 0) {
    console.log('invalid purls:\n' + bad.join('\n'))
    return 1
  }
  console.log('valid')
  return 0
}

if (process.argv.length !== 3) {
  console.error('usage: node validate.js FILE.cdx.json')
  process.exit(2)
}
main(process.argv[2]).then((code) => process.exit(code), (error) => {
  console.error(error.stack ?? String(error))
  process.exit(1)
})
