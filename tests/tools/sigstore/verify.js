// Verifies a sigstore bundle offline with sigstore-js, against a trusted root, as the oracle of
// podplane's own keyless checks (cache/sigstore.hpp):
//   node verify.js TRUSTED_ROOT.json BUNDLE.json IDENTITY ISSUER [ARTIFACT]
// ARTIFACT is the signed payload of a message-signature bundle (cosign's .sig layout repackaged);
// a DSSE bundle carries its payload. Prints "verified" and exits 0, or prints why and exits 1.
// No network: the trust material is the file given, never sigstore's TUF repository.
'use strict';
const fs = require('fs');
const { Verifier, toSignedEntity, toTrustMaterial } = require('@sigstore/verify');
const { bundleFromJSON } = require('@sigstore/bundle');
const { TrustedRoot } = require('@sigstore/protobuf-specs');

function exact(text) {
  return '^' + text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&') + '$';
}

const [rootFile, bundleFile, identity, issuer, artifactFile] = process.argv.slice(2);
if (!issuer) {
  console.error('usage: node verify.js TRUSTED_ROOT.json BUNDLE.json IDENTITY ISSUER [ARTIFACT]');
  process.exit(2);
}
try {
  const trust = toTrustMaterial(TrustedRoot.fromJSON(JSON.parse(fs.readFileSync(rootFile, 'utf8'))));
  const bundle = bundleFromJSON(JSON.parse(fs.readFileSync(bundleFile, 'utf8')));
  const entity = toSignedEntity(bundle, artifactFile ? fs.readFileSync(artifactFile) : undefined);
  new Verifier(trust).verify(entity, { subjectAlternativeName: exact(identity), extensions: { issuer } });
  console.log('verified');
} catch (error) {
  console.log('refused: ' + (error.code ? error.code + ': ' : '') + error.message + (error.cause ? ' (' + error.cause.message + ')' : ''));
  process.exit(1);
}
