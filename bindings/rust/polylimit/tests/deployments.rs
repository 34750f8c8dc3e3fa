//! Redis Cluster, Sentinel and TLS deployments, each started by
//! tests/fixture/redisfix for its test: the blocking API and check_async
//! admit exactly the limit, as on a standalone server. A deployment that
//! cannot start fails its test.
#![cfg(feature = "tokio")]

mod common;

use common::{free_port, prefix, Deployment};
use polylimit::{Client, Error, Limiter};
use std::process::Command;
use std::time::Duration;

const KEYS: usize = 10;
const TRIES: usize = 150;
// Per hour: one unit refills every 36 s, so no refill can sneak into a run.
const LIMIT: i64 = 100;

/// Blocking: one thread per key, TRIES checks each, in order: exactly LIMIT
/// admitted per key, `remaining` counting down LIMIT-1..0.
fn blocking_totals(l: &Limiter, first: usize) {
    let threads: Vec<_> = (first..first + KEYS)
        .map(|i| {
            let l = l.clone();
            std::thread::spawn(move || {
                let key = format!("user:{i}");
                let mut left = Vec::new();
                for _ in 0..TRIES {
                    let d = l.check(&key, 1).unwrap();
                    if d.allowed {
                        left.push(d.remaining);
                    } else {
                        assert_eq!((d.remaining, d.granted), (0, 0), "{d:?}");
                        assert!(d.retry_after_ms > 0, "{d:?}");
                    }
                }
                left
            })
        })
        .collect();
    let expected: Vec<i64> = (0..LIMIT).rev().collect();
    for t in threads {
        assert_eq!(t.join().unwrap(), expected);
    }
}

/// check_async: KEYS x TRIES checks all in flight at once on a
/// multi-threaded runtime: exactly LIMIT admitted per key, and the admitted
/// ones saw every `remaining` from 0 to LIMIT-1 once.
fn async_totals(l: &Limiter, first: usize) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut tasks = Vec::new();
        for i in first..first + KEYS {
            for _ in 0..TRIES {
                let l = l.clone();
                tasks.push((
                    i - first,
                    tokio::spawn(async move { l.check_async(format!("user:{i}"), 1).await.unwrap() }),
                ));
            }
        }
        let mut left: Vec<Vec<i64>> = vec![Vec::new(); KEYS];
        for (k, t) in tasks {
            let d = t.await.unwrap();
            if d.allowed {
                left[k].push(d.remaining);
            }
        }
        for mut l in left {
            l.sort_unstable();
            assert_eq!(l, (0..LIMIT).collect::<Vec<_>>());
        }
    });
}

/// Both APIs on 2 x KEYS keys, then a batch over all of them (every key is
/// spent) and a reset.
fn exact_totals(client: &Client, name: &str) -> Limiter {
    let l = client
        .limiter_builder()
        .spec(format!("{LIMIT}/hour"))
        .prefix(prefix(name))
        .build()
        .unwrap();
    blocking_totals(&l, 0);
    async_totals(&l, KEYS);
    let keys: Vec<String> = (0..2 * KEYS).map(|i| format!("user:{i}")).collect();
    let batch = l.check_many(&keys, 1).unwrap();
    assert_eq!(batch.len(), 2 * KEYS);
    for d in batch {
        let d = d.unwrap();
        assert!(!d.allowed && d.remaining == 0, "{d:?}");
    }
    l.reset("user:3").unwrap();
    assert_eq!(l.peek("user:3").unwrap().remaining, LIMIT);
    assert!(l.check("user:3", 1).unwrap().allowed);
    l
}

fn redis_cli(port: u16, args: &[&str]) -> String {
    let out = Command::new("redis-cli")
        .args(["-p", &port.to_string()])
        .args(args)
        .output()
        .expect("redis-cli");
    assert!(out.status.success(), "redis-cli {args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

#[test]
fn cluster_exact_totals_on_every_master() {
    let cluster = Deployment::start(&["cluster", "--masters", "3", "--replicas", "0"]);
    assert!(cluster.url.starts_with("redis+cluster://"), "{}", cluster.url);
    let client = Client::open(&cluster.url).unwrap();
    exact_totals(&client, "cluster");
    // The keys went to different slots on every master: each holds some.
    let masters = cluster.node_ports("master");
    assert_eq!(masters.len(), 3, "{}", cluster.desc);
    for port in masters {
        let keys: u64 = redis_cli(port, &["DBSIZE"]).parse().unwrap();
        assert!(keys > 0, "master {port} holds no key");
    }
}

#[test]
fn sentinel_exact_totals_on_the_master() {
    let sentinel = Deployment::start(&["sentinel", "--replicas", "1", "--sentinels", "3"]);
    assert!(sentinel.url.starts_with("redis+sentinel://"), "{}", sentinel.url);
    let client = Client::open(&sentinel.url).unwrap();
    let l = exact_totals(&client, "sentinel");
    // The state is on the master the sentinels name.
    let master = sentinel.node_ports("master")[0];
    let keys: u64 = redis_cli(master, &["DBSIZE"]).parse().unwrap();
    assert!(keys >= 2 * KEYS as u64, "{keys} keys on the master");
    assert!(!l.check("user:0", 1).unwrap().allowed);
}

/// A CA and a certificate for 127.0.0.1 signed by it, made with openssl in
/// a fresh directory (removed on drop).
struct Certs(std::path::PathBuf);

impl Certs {
    fn make() -> Certs {
        let dir = std::env::temp_dir().join(format!("polylimit-rust-tls-{}-{}", std::process::id(), free_port()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("server.ext"), "subjectAltName=IP:127.0.0.1\n").unwrap();
        let key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
        let run = |args: &[&str]| {
            let out = Command::new("openssl")
                .args(args)
                .current_dir(&dir)
                .output()
                .expect("openssl");
            assert!(out.status.success(), "openssl {args:?}: {out:?}");
        };
        run(&[
            &["req", "-x509"],
            &key[..],
            &[
                "-keyout",
                "ca.key",
                "-out",
                "ca.crt",
                "-days",
                "30",
                "-subj",
                "/CN=polylimit-rust-test-ca",
            ],
        ]
        .concat());
        run(&[
            &["req"],
            &key[..],
            &["-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1"],
        ]
        .concat());
        run(&[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "server.crt",
            "-days",
            "30",
            "-extfile",
            "server.ext",
        ]);
        Certs(dir)
    }

    fn file(&self, name: &str) -> String {
        self.0.join(name).to_str().unwrap().to_string()
    }

    /// The server's certificate, key and CA as redis-server (and redisfix) take them.
    fn server_args(&self) -> Vec<String> {
        [
            ("--tls-cert-file", "server.crt"),
            ("--tls-key-file", "server.key"),
            ("--tls-ca-cert-file", "ca.crt"),
        ]
        .iter()
        .flat_map(|(flag, name)| [flag.to_string(), self.file(name)])
        .collect()
    }
}

impl Drop for Certs {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn tls_exact_totals_and_certificate_checks() {
    let certs = Certs::make();
    let tls = certs.server_args();
    // redisfix picks the TLS port (and picks again if the server cannot bind it).
    let mut args = vec!["standalone"];
    args.extend(tls.iter().map(String::as_str));
    let server = Deployment::start(&args);
    let url = server.url.clone();
    assert!(url.starts_with("rediss://"), "{url}");
    let client = Client::builder().tls_ca_file(certs.file("ca.crt")).open(&url).unwrap();
    exact_totals(&client, "tls");
    // The TLS port really is the server's: the plain port sees the same keys.
    let plain = server.node_ports("master")[0];
    let keys: u64 = redis_cli(plain, &["DBSIZE"]).parse().unwrap();
    assert!(keys >= 2 * KEYS as u64, "{keys} keys");

    // TLS options on a URL without TLS are a mistake, not ignored.
    let plain_url = format!("redis://127.0.0.1:{plain}");
    let r = Client::builder().tls_ca_file(certs.file("ca.crt")).open(&plain_url);
    assert!(matches!(r, Err(Error::InvalidArgument(_))), "{r:?}");

    // Without the CA the server's certificate is refused, blocking and async.
    let untrusted = Client::builder()
        .connect_timeout(Duration::from_secs(2))
        .open(&url)
        .unwrap();
    let l = untrusted.limiter("5/minute").unwrap();
    let e = l.check("k", 1).unwrap_err();
    let m = e.to_string().to_lowercase();
    assert!(m.contains("tls") || m.contains("certificate"), "{e}");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let e = rt.block_on(l.check_async("k", 1)).unwrap_err();
    let m = e.to_string().to_lowercase();
    assert!(m.contains("tls") || m.contains("certificate"), "{e}");
}

#[test]
fn tls_sentinel_exact_totals() {
    let certs = Certs::make();
    let tls = certs.server_args();
    let mut args = vec!["sentinel", "--replicas", "1", "--sentinels", "3"];
    args.extend(tls.iter().map(String::as_str));
    let sentinel = Deployment::start(&args);
    assert!(sentinel.url.starts_with("rediss+sentinel://"), "{}", sentinel.url);
    let client = Client::builder()
        .tls_ca_file(certs.file("ca.crt"))
        .open(&sentinel.url)
        .unwrap();
    exact_totals(&client, "tls-sentinel");
}
