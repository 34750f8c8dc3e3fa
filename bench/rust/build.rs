//! The versions this bench was built with, read from Cargo.lock, for the
//! first line of its output (env!("BENCH_VERSION_<crate>")).

fn main() {
    println!("cargo:rerun-if-changed=Cargo.lock");
    let lock = std::fs::read_to_string("Cargo.lock").unwrap_or_default();
    for name in ["polylimit", "redis", "tokio", "governor"] {
        let version = lock
            .split("[[package]]")
            .find(|p| p.lines().any(|l| l.trim() == format!("name = \"{name}\"")))
            .and_then(|p| {
                p.lines()
                    .find_map(|l| l.trim().strip_prefix("version = \"")?.strip_suffix('"'))
            })
            .unwrap_or("?");
        println!(
            "cargo:rustc-env=BENCH_VERSION_{}={version}",
            name.to_uppercase()
        );
    }
}
