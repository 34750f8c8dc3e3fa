//! A throwaway redis-server for the tests, started once per test binary by
//! tests/fixture/redisfix (the launcher every language's suite uses). It
//! stops when this process exits: the launcher stops on end of input.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock};

struct Server {
    url: String,
    _child: Mutex<Child>,
}

static SERVER: OnceLock<Server> = OnceLock::new();

/// The URL of this binary's standalone redis-server.
pub fn redis_url() -> &'static str {
    &SERVER
        .get_or_init(|| {
            let launcher = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../tests/fixture/redisfix");
            let mut child = Command::new("python3")
                .arg(launcher)
                .arg("standalone")
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .expect("cannot run tests/fixture/redisfix (python3 and redis-server needed)");
            let mut line = String::new();
            BufReader::new(child.stdout.take().unwrap())
                .read_line(&mut line)
                .unwrap();
            let url = json_string(&line, "url").unwrap_or_else(|| panic!("redisfix: {line}"));
            Server {
                url,
                _child: Mutex::new(child),
            }
        })
        .url
}

/// The string value of `"key": "..."` in one line of JSON (no escapes in
/// what redisfix prints for URLs).
fn json_string(line: &str, key: &str) -> Option<String> {
    let at = line.find(&format!("\"{key}\": \""))? + key.len() + 5;
    let end = line[at..].find('"')?;
    Some(line[at..at + end].to_string())
}

/// A key prefix unique to this process and test, so tests never share state.
pub fn prefix(test: &str) -> String {
    format!("rt{}-{}", std::process::id(), test)
}

/// A Cluster, Sentinel or TLS deployment of its own, started by redisfix
/// with `args` for one test; stopped (the launcher's stdin closed) on drop.
/// Panics when it cannot start: a missing server kind is a failure.
pub struct Deployment {
    /// What redisfix printed: one line of JSON.
    pub desc: String,
    pub url: String,
    child: Child,
}

impl Deployment {
    pub fn start(args: &[&str]) -> Deployment {
        let launcher = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../tests/fixture/redisfix");
        let mut child = Command::new("python3")
            .arg(launcher)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("cannot run tests/fixture/redisfix (python3 and redis-server needed)");
        let mut desc = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut desc)
            .unwrap();
        let url = json_string(&desc, "url").unwrap_or_else(|| panic!("redisfix {args:?}: {desc}"));
        Deployment { desc, url, child }
    }

    /// The ports of the data nodes whose role is `role` ("master", "replica").
    pub fn node_ports(&self, role: &str) -> Vec<u16> {
        let nodes = &self.desc[self.desc.find("\"nodes\": [").expect("no nodes")..];
        let nodes = &nodes[..nodes.find(']').unwrap()];
        nodes
            .split('{')
            .filter(|n| n.contains(&format!("\"role\": \"{role}\"")))
            .map(|n| {
                let at = n.find("\"port\": ").unwrap() + 8;
                let digits: String = n[at..].chars().take_while(char::is_ascii_digit).collect();
                digits.parse().unwrap()
            })
            .collect()
    }
}

impl Deployment {
    /// Sends `sig` ("-STOP", "-CONT") to the first data node.
    pub fn signal(&self, sig: &str) {
        let nodes = &self.desc[self.desc.find("\"nodes\"").expect("no nodes")..];
        let at = nodes.find("\"pid\": ").unwrap() + 7;
        let pid: String = nodes[at..].chars().take_while(char::is_ascii_digit).collect();
        let ok = Command::new("kill").args([sig, &pid]).status().unwrap().success();
        assert!(ok, "kill {sig} {pid}");
    }
}

/// A "100/minute" limiter under `prefix` whose checks take leases of 10
/// units for 60 s.
pub fn leased(client: &polylimit::Client, prefix: &str) -> polylimit::Limiter {
    client
        .limiter_builder()
        .spec("100/minute")
        .prefix(prefix)
        .lease(10, std::time::Duration::from_secs(60))
        .build()
        .unwrap()
}

impl Drop for Deployment {
    fn drop(&mut self) {
        drop(self.child.stdin.take()); // end of input: redisfix stops everything
        let _ = self.child.wait();
    }
}

/// A free loopback TCP port (bound, then released).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Every key in the Redis at `url` (`redis://host:port`, no password),
/// read with SCAN over a plain RESP connection.
pub fn redis_keys(url: &str) -> Vec<String> {
    use std::io::Write;
    let addr = url.trim_start_matches("redis://").trim_end_matches('/');
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    let mut r = BufReader::new(s.try_clone().unwrap());
    let mut line = || {
        let mut l = String::new();
        r.read_line(&mut l).unwrap();
        l.trim_end().to_string()
    };
    let mut keys = Vec::new();
    let mut cursor = "0".to_string();
    loop {
        let cmd = format!(
            "*4\r\n$4\r\nSCAN\r\n${}\r\n{cursor}\r\n$5\r\nCOUNT\r\n$4\r\n1000\r\n",
            cursor.len()
        );
        s.write_all(cmd.as_bytes()).unwrap();
        assert_eq!(line(), "*2");
        line(); // $n
        cursor = line();
        let n: usize = line()[1..].parse().unwrap();
        for _ in 0..n {
            line(); // $n
            keys.push(line());
        }
        if cursor == "0" {
            break;
        }
    }
    keys
}
