#!/usr/bin/env node
'use strict';
// The package's install step (package.json "install"; `npm rebuild polylimit`
// runs it again):
// 1. the prebuilt addon for this platform (prebuilds/<platform>-<arch>[-musl],
//    lib/platform.js), if the package has one and it loads here: nothing to
//    build, no compiler, no network;
// 2. otherwise the addon is built from the sources the package carries
//    (native/, CMakeLists.txt) with CMake and the system's C++ compiler,
//    against the running Node's headers, into build/Release/polylimit.node.
//    A missing tool fails the install with one line naming it.
// `npm install --build-from-source` (or npm_config_build_from_source=true)
// skips the prebuild; POLYLIMIT_NODE_ADDON set skips the whole step (the
// package then loads that file).

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const platform = require('../lib/platform');

const pkg = platform.packageDir;
const say = (line) => console.log(`polylimit: ${line}`);

class Missing extends Error {}

// The one line a missing tool ends the install with.
function missing(what) {
  throw new Missing(`polylimit: cannot build the native addon from source: ${what} not found`);
}

function firstLine(text) {
  return String(text).split('\n')[0];
}

// Runs a tool; null when it is not there at all.
function probe(command, args) {
  const r = spawnSync(command, args, { encoding: 'utf8' });
  if (r.error) return null;
  return r;
}

function findCmake() {
  const cmake = process.env.CMAKE || 'cmake';
  const r = probe(cmake, ['--version']);
  if (r?.status !== 0) missing('cmake (CMake 3.18 or later; Debian/Ubuntu: cmake, Alpine: cmake)');
  const m = /version (\d+)\.(\d+)/.exec(r.stdout);
  if (m && (Number(m[1]) < 3 || (Number(m[1]) === 3 && Number(m[2]) < 18)))
    missing(`CMake 3.18 or later (${cmake} is ${m[1]}.${m[2]})`);
  return cmake;
}

// CXX if set (CMake reads it itself: null here), else the first of c++,
// g++, clang++ on PATH.
function findCompiler() {
  if (process.env.CXX) {
    if (probe(process.env.CXX.trim().split(/\s+/)[0], ['--version'])?.status === 0) return null;
  } else {
    for (const cxx of ['c++', 'g++', 'clang++']) if (probe(cxx, ['--version'])?.status === 0) return cxx;
  }
  return missing(
    process.env.CXX
      ? `the C++ compiler CXX=${process.env.CXX}`
      : 'a C++17 compiler (c++, g++ or clang++; Debian/Ubuntu: g++, Alpine: g++ or build-base)',
  );
}

function findGenerator() {
  if (probe('ninja', ['--version'])?.status === 0) return 'Ninja';
  if (probe('make', ['--version'])?.status === 0) return 'Unix Makefiles';
  return missing('make or ninja (Debian/Ubuntu: make, Alpine: make)');
}

// node_api.h of the running Node: <prefix>/include/node (official builds,
// Debian 13's nodejs, NodeSource), or npm's --nodedir.
function findNodeHeaders() {
  const dirs = [];
  if (process.env.npm_config_nodedir) dirs.push(path.join(process.env.npm_config_nodedir, 'include', 'node'));
  dirs.push(path.join(path.dirname(path.dirname(process.execPath)), 'include', 'node'));
  for (const dir of dirs) if (fs.existsSync(path.join(dir, 'node_api.h'))) return dir;
  return missing(`Node's headers (node_api.h in ${dirs.join(' or ')}; Debian 12: libnode-dev)`);
}

function sourceBuild() {
  if (process.platform !== 'linux') {
    throw new Missing(
      `polylimit: cannot build the native addon from source: it builds on Linux only (this is ${process.platform})`,
    );
  }
  const cmake = findCmake();
  const cxx = findCompiler();
  const generator = findGenerator();
  const nodeHeaders = findNodeHeaders();

  const work = path.join(pkg, 'build', 'cmake');
  const out = path.dirname(platform.sourceBuildPath());
  const log = path.join(pkg, 'build', 'build.log');
  fs.rmSync(path.join(pkg, 'build'), { recursive: true, force: true });
  fs.mkdirSync(work, { recursive: true });
  say(`building the addon from source (${cxx || process.env.CXX}, ${generator}; the log: ${log})`);
  const logFd = fs.openSync(log, 'w');
  const run = (args) => {
    fs.writeSync(logFd, `$ ${cmake} ${args.join(' ')}\n`);
    const r = spawnSync(cmake, args, { cwd: pkg, encoding: 'utf8', maxBuffer: 64 << 20 });
    fs.writeSync(logFd, `${r.stdout || ''}${r.stderr || ''}`);
    return r;
  };
  const configure = run([
    '-S',
    pkg,
    '-B',
    work,
    '-G',
    generator,
    '-DCMAKE_BUILD_TYPE=Release',
    ...(cxx ? [`-DCMAKE_CXX_COMPILER=${cxx}`] : []),
    `-DPOLYLIMIT_NODE_INCLUDE_DIR=${nodeHeaders}`,
    `-DPOLYLIMIT_NODE_OUTPUT_DIR=${out}`,
  ]);
  if (configure.status !== 0) {
    // What CMakeLists.txt found missing (OpenSSL's headers): its line alone.
    const m = /polylimit-missing: ([^()]*\([^()]*\))/.exec(
      `${configure.stdout}${configure.stderr}`.replace(/\s+/g, ' '),
    );
    if (m) missing(m[1]);
    fs.closeSync(logFd);
    throw new Error(`cmake could not configure the build (${firstLine(configure.stderr)}); the log: ${log}`);
  }
  const jobs = process.env.CMAKE_BUILD_PARALLEL_LEVEL || String(os.availableParallelism?.() ?? os.cpus().length);
  const build = run(['--build', work, '--parallel', jobs]);
  fs.closeSync(logFd);
  if (build.status !== 0) {
    const tail = `${build.stdout}${build.stderr}`.trim().split('\n').slice(-15).join('\n');
    throw new Error(`compiling the addon failed; the last lines of ${log}:\n${tail}`);
  }
  require(platform.sourceBuildPath());
  // Only the addon (and the log) stay: the objects would weigh tens of MB.
  fs.rmSync(work, { recursive: true, force: true });
  say(`built ${path.relative(pkg, platform.sourceBuildPath())}`);
}

function main() {
  if (process.env.POLYLIMIT_NODE_ADDON) {
    say(`POLYLIMIT_NODE_ADDON is set (${process.env.POLYLIMIT_NODE_ADDON}): nothing to install`);
    return;
  }
  const name = platform.prebuildName();
  const prebuild = platform.prebuildPath(name);
  const fromSource = /^(true|1|polylimit)$/.test(process.env.npm_config_build_from_source || '');
  if (!fromSource && fs.existsSync(prebuild)) {
    try {
      require(prebuild);
      say(`using the prebuilt addon for ${name}`);
      return;
    } catch (e) {
      say(`the prebuilt addon for ${name} does not load here (${firstLine(e.message)}): building from source`);
    }
  }
  if (!fs.existsSync(path.join(pkg, 'native', 'capi', 'include', 'polylimit.h'))) {
    // A checkout of the repository (npm install in bindings/node for the
    // development tools): the addon is built with the root CMake project.
    say(
      'no bundled sources (native/): build the addon with CMake, -DPOLYLIMIT_BUILD_NODE=ON (bindings/node/README.md)',
    );
    return;
  }
  if (!fromSource && !fs.existsSync(prebuild)) say(`no prebuilt addon for ${name}: building from source`);
  sourceBuild();
}

try {
  main();
} catch (e) {
  console.error(e instanceof Missing ? e.message : `polylimit: ${e.message}`);
  process.exit(1);
}
