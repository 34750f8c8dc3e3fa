'use strict';
// rediss:// from inside Node: Node carries its own OpenSSL symbols, and the
// addon's TLS calls must still reach the library's OpenSSL session. A CA and
// a server certificate for 127.0.0.1 are made with the openssl command.
const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const polylimit = require('../../bindings/node');
const { startRedis, uniquePrefix } = require('./redis');

let dir;
let server;
let tlsPort;

before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'polylimit-node-tls-'));
  const openssl = (...args) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  const key = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl(
    'req',
    '-x509',
    ...key,
    '-keyout',
    'ca.key',
    '-out',
    'ca.crt',
    '-days',
    '30',
    '-subj',
    '/CN=polylimit-node-test-ca',
  );
  openssl('req', ...key, '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=127.0.0.1');
  fs.writeFileSync(path.join(dir, 'server.ext'), 'subjectAltName=IP:127.0.0.1\n');
  openssl(
    'x509',
    '-req',
    '-in',
    'server.csr',
    '-CA',
    'ca.crt',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'server.crt',
    '-days',
    '30',
    '-extfile',
    'server.ext',
  );
  // redisfix picks the TLS port (and picks again if the server cannot bind it).
  server = await startRedis([
    'standalone',
    '--tls-cert-file',
    path.join(dir, 'server.crt'),
    '--tls-key-file',
    path.join(dir, 'server.key'),
    '--tls-ca-cert-file',
    path.join(dir, 'ca.crt'),
  ]);
  tlsPort = server.desc.nodes[0].tls_port;
});

after(async () => {
  if (server) await server.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

test('rediss:// with the CA: exact totals', async () => {
  const client = new polylimit.Client(`rediss://127.0.0.1:${tlsPort}`, { tls: { caFile: path.join(dir, 'ca.crt') } });
  try {
    const limiter = client.limiter('100/minute', { prefix: uniquePrefix('tls') });
    const ds = await Promise.all(Array.from({ length: 300 }, () => limiter.check('k')));
    assert.equal(ds.filter((d) => d.allowed).length, 100);
  } finally {
    client.close();
  }
});

test('rediss:// without the CA: the certificate is refused', async () => {
  const client = new polylimit.Client(`rediss://127.0.0.1:${tlsPort}`, { connectTimeoutMs: 2000 });
  try {
    await assert.rejects(client.limiter('1/s').check('k'), (e) => {
      assert.ok(e instanceof polylimit.PolylimitError, String(e));
      assert.match(e.message, /TLS|certificate/i);
      return true;
    });
  } finally {
    client.close();
  }
});

test('TLS options on a URL without TLS are refused', () => {
  const plain = `redis://127.0.0.1:${server.desc.nodes[0].port}`;
  assert.throws(
    () => new polylimit.Client(plain, { tls: { caFile: path.join(dir, 'ca.crt') } }),
    polylimit.InvalidArgumentError,
  );
  assert.throws(() => new polylimit.Client(plain, { tls: { caFile: 7 } }), TypeError);
});
