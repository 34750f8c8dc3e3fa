'use strict';
// Where the package keeps its addon: one prebuilt addon per platform under
// prebuilds/<platform>-<arch>[-musl]/polylimit.node (linux-x64,
// linux-x64-musl, linux-arm64, darwin-arm64, ...), and the addon a source
// build made (scripts/install.js) under build/Release/polylimit.node.
// Shared by lib/index.js (which loads one) and scripts/install.js (which
// picks or builds one at `npm install`).

const path = require('node:path');

const packageDir = path.join(__dirname, '..');

let muslCache;

// A Linux C library other than glibc (Alpine's musl): a glibc build of Node
// reports the glibc it runs on, a musl build reports none.
function isMusl() {
  if (process.platform !== 'linux') return false;
  if (muslCache === undefined) {
    const report = process.report;
    if (typeof report?.getReport !== 'function') return (muslCache = false);
    // Leave the network out of the report where Node can (only speed).
    const exclude = 'excludeNetwork' in report ? report.excludeNetwork : undefined;
    if (exclude !== undefined) report.excludeNetwork = true;
    try {
      muslCache = !report.getReport().header?.glibcVersionRuntime;
    } finally {
      if (exclude !== undefined) report.excludeNetwork = exclude;
    }
  }
  return muslCache;
}

// 'linux-x64', 'linux-x64-musl', 'darwin-arm64', ...
function prebuildName() {
  return `${process.platform}-${process.arch}${isMusl() ? '-musl' : ''}`;
}

function prebuildPath(name = prebuildName()) {
  return path.join(packageDir, 'prebuilds', name, 'polylimit.node');
}

function sourceBuildPath() {
  return path.join(packageDir, 'build', 'Release', 'polylimit.node');
}

module.exports = { isMusl, prebuildName, prebuildPath, sourceBuildPath, packageDir };
