//! Client::from_env, alone in its binary: it changes the environment, which
//! must not happen while other threads (tests) run.

use polylimit::{Client, Error};

#[test]
fn from_env_names_memory() {
    std::env::remove_var("POLYLIMIT_URL");
    let e = Client::from_env().unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)));
    assert!(e.to_string().contains("memory://"), "{e}");
    std::env::set_var("POLYLIMIT_URL", "memory://");
    assert!(
        Client::from_env()
            .unwrap()
            .limiter("1/s")
            .unwrap()
            .check("k", 1)
            .unwrap()
            .allowed
    );
    std::env::remove_var("POLYLIMIT_URL");
}
