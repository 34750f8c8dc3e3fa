#!/usr/bin/env node
'use strict';
// Copies what a source build of the addon needs into native/ of the package
// being packed (npm's prepack step runs it; so does tests/node/pack_test.sh):
// the core's sources (core/include, core/src, and core/scripts, the Lua the
// generated source embeds), the C ABI (capi/include, capi/src), the files
// the build would generate (capi/vocabulary/generate.py's vocabulary.h and
// core/cmake/embed_scripts.cmake's scripts_generated.*: a source build then
// needs neither Python nor that step), node-addon-api's headers (so the
// package has no dependency to fetch at install) and the license files.
// native/ is ignored by git.
//
//   node scripts/vendor.js [PACKAGE_DIR]          (default: the package this file is in)
//   node scripts/vendor.js --clean [PACKAGE_DIR]  remove native/ again (npm's postpack),
//                                                 where the repository can refill it
// The repository: POLYLIMIT_SOURCE_DIR, else two directories above the
// package. Run outside the repository (packing an unpacked tarball again),
// it keeps a complete native/ as it is.

const fs = require('node:fs');
const path = require('node:path');
const { execFileSync } = require('node:child_process');

const args = process.argv.slice(2);
const clean = args[0] === '--clean';
if (clean) args.shift();
const pkg = path.resolve(args[0] || path.join(__dirname, '..'));
const native = path.join(pkg, 'native');
const marker = path.join('capi', 'include', 'polylimit.h');

function repository() {
  for (const dir of [process.env.POLYLIMIT_SOURCE_DIR, path.join(pkg, '..', '..')]) {
    if (dir && fs.existsSync(path.join(dir, marker)) && fs.existsSync(path.join(dir, 'core', 'src'))) return dir;
  }
  return null;
}

function fail(message) {
  console.error(`vendor.js: ${message}`);
  process.exit(1);
}

// node-addon-api's headers: the package's devDependency (npm install in
// bindings/node), wherever npm put it.
function addonApiDir(root) {
  for (const from of [pkg, path.join(__dirname, '..'), path.join(root, 'bindings', 'node')]) {
    try {
      return path.dirname(require.resolve('node-addon-api/package.json', { paths: [from] }));
    } catch {}
  }
  return fail('node-addon-api is not installed: run npm install in bindings/node');
}

const root = repository();
if (clean) {
  // After `npm pack` in bindings/node: the checkout as it was (and no
  // native/ for a later `npm install` there to build from).
  if (root) fs.rmSync(native, { recursive: true, force: true });
  process.exit(0);
}
if (!root) {
  if (fs.existsSync(path.join(native, marker)) && fs.existsSync(path.join(native, 'node-addon-api', 'napi.h'))) {
    console.log('vendor.js: no repository here; native/ is kept as it is');
    process.exit(0);
  }
  fail('the repository is not two directories up and POLYLIMIT_SOURCE_DIR is not set');
}

fs.rmSync(native, { recursive: true, force: true });
const copy = (from, to = from) =>
  fs.cpSync(path.join(root, from), path.join(native, to), {
    recursive: true,
    filter: (src) => !src.includes('__pycache__'),
  });
for (const dir of ['core/include', 'core/src', 'core/scripts', 'capi/include', 'capi/src']) copy(dir);
for (const file of ['LICENSE', 'THIRD_PARTY_NOTICES']) copy(file);

const generated = path.join(native, 'generated');
execFileSync(process.env.PYTHON || 'python3', [path.join(root, 'capi/vocabulary/generate.py'), 'cpp', generated], {
  stdio: ['ignore', 'ignore', 'inherit'],
});
const scripts = path.join(root, 'core', 'scripts');
execFileSync(
  process.env.CMAKE || 'cmake',
  [
    `-DSCRIPTS_DIR=${scripts}`,
    `-DOUT_HEADER=${path.join(generated, 'scripts_generated.h')}`,
    `-DOUT_SOURCE=${path.join(generated, 'scripts_generated.cpp')}`,
    '-P',
    path.join(root, 'core/cmake/embed_scripts.cmake'),
  ],
  { stdio: ['ignore', 'ignore', 'inherit'] },
);
for (const file of ['polylimit/vocabulary.h', 'scripts_generated.h', 'scripts_generated.cpp']) {
  if (!fs.existsSync(path.join(generated, file))) fail(`generating native/generated/${file} failed`);
}

const api = addonApiDir(root);
fs.mkdirSync(path.join(native, 'node-addon-api'));
for (const file of ['napi.h', 'napi-inl.h', 'napi-inl.deprecated.h', 'LICENSE.md', 'package.json']) {
  fs.copyFileSync(path.join(api, file), path.join(native, 'node-addon-api', file));
}
const version = require(path.join(api, 'package.json')).version;
console.log(`vendor.js: native/ filled from ${path.relative(process.cwd(), root) || '.'} (node-addon-api ${version})`);
