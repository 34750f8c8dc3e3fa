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
