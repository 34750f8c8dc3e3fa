//! Finds or builds libpolylimit.
//!
//! Feature `system`: an installed library through pkg-config (`polylimit`,
//! linked dynamically). Default: the C++ core is built from its sources with
//! CMake and linked statically, with what the installed
//! `polylimit-static.pc` says a static link needs (OpenSSL, the C++
//! runtime, threads), so the link line is the one the C build itself
//! vouches for.
//!
//! The sources are `native/` inside the packaged crate (vendor.sh copies
//! them there) or, in the repository, the root three directories up.

use std::env;
use std::path::{Path, PathBuf};

/// The C library release this crate declares (the `+x.y.z` of its version).
const C_VERSION: &str = "1.0.0";

fn main() {
    let include = if env::var_os("CARGO_FEATURE_SYSTEM").is_some() {
        system()
    } else {
        bundled()
    };
    println!("cargo:include={}", include.display());
    layout_probe(&include);
}

fn system() -> PathBuf {
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    let lib = pkg_config::Config::new()
        .atleast_version(C_VERSION)
        .probe("polylimit")
        .unwrap_or_else(|e| {
            panic!(
                "feature `system`: pkg-config cannot find polylimit >= {C_VERSION} ({e}); \
                 install libpolylimit-dev or set PKG_CONFIG_PATH, or build without `system` \
                 to compile the bundled sources"
            )
        });
    lib.include_paths
        .into_iter()
        .find(|p| p.join("polylimit.h").exists())
        .expect("pkg-config polylimit: no include path holds polylimit.h")
}

fn sources() -> PathBuf {
    let dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let packaged = dir.join("native");
    let in_repo = dir.join("../../..");
    for root in [packaged, in_repo] {
        if root.join("CMakeLists.txt").exists() && root.join("capi/include/polylimit.h").exists() {
            return root.canonicalize().unwrap_or(root);
        }
    }
    panic!(
        "polylimit-sys: the C++ sources are missing (neither native/ nor the repository root \
         holds CMakeLists.txt and capi/include/polylimit.h); run vendor.sh before packaging, \
         or enable the `system` feature to use an installed libpolylimit"
    );
}

fn bundled() -> PathBuf {
    let src = sources();
    for dir in ["CMakeLists.txt", "core", "capi", "packaging"] {
        println!("cargo:rerun-if-changed={}", src.join(dir).display());
    }
    let out = cmake::Config::new(&src)
        .define("POLYLIMIT_BUILD_TESTS", "OFF")
        .define("POLYLIMIT_BUILD_TOOLS", "OFF")
        .define("POLYLIMIT_BUILD_SHARED", "OFF")
        .define("POLYLIMIT_BUILD_STATIC", "ON")
        .define("POLYLIMIT_BUILD_PYTHON", "OFF")
        .define("CMAKE_INSTALL_LIBDIR", "lib")
        // Rust links position-independent executables by default.
        .define("CMAKE_POSITION_INDEPENDENT_CODE", "ON")
        .profile("Release")
        .build();
    let pc = out.join("lib/pkgconfig/polylimit-static.pc");
    let text =
        std::fs::read_to_string(&pc).unwrap_or_else(|e| panic!("polylimit-sys: cannot read {}: {e}", pc.display()));
    link_from_pc(&text, &out);
    out.join("include")
}

/// Turns the `Libs:` line of polylimit-static.pc into cargo link directives.
fn link_from_pc(text: &str, prefix: &Path) {
    let libs = text
        .lines()
        .find_map(|l| l.strip_prefix("Libs:"))
        .expect("polylimit-static.pc has no Libs: line");
    for word in libs.split_whitespace() {
        let word = word
            .replace("${libdir}", &prefix.join("lib").display().to_string())
            .replace("${prefix}", &prefix.display().to_string());
        if let Some(name) = word.strip_prefix("-l") {
            // The C++ runtime and system libraries: shared, as a C++ program links them.
            println!("cargo:rustc-link-lib={name}");
        } else if let Some(dir) = word.strip_prefix("-L") {
            println!("cargo:rustc-link-search=native={dir}");
        } else if word.ends_with(".a") {
            let path = Path::new(&word);
            let file = path.file_name().unwrap().to_str().unwrap();
            let name = file.strip_prefix("lib").unwrap_or(file).trim_end_matches(".a");
            println!("cargo:rustc-link-search=native={}", path.parent().unwrap().display());
            println!("cargo:rustc-link-lib=static={name}");
        } else if word.ends_with(".so") || word.contains(".so.") {
            let path = Path::new(&word);
            let file = path.file_name().unwrap().to_str().unwrap();
            let name = file.strip_prefix("lib").unwrap_or(file);
            let name = &name[..name.find(".so").unwrap()];
            println!("cargo:rustc-link-search=native={}", path.parent().unwrap().display());
            println!("cargo:rustc-link-lib={name}");
        } else if word == "-pthread" {
            println!("cargo:rustc-link-lib=pthread");
        }
    }
}

/// Compiles layout/layout.c against the header into a separate archive that
/// only tests/layout.rs links (it declares the symbols), so the C compiler's
/// view of every struct can be compared with the Rust declarations.
fn layout_probe(include: &Path) {
    println!("cargo:rerun-if-changed=layout/layout.c");
    cc::Build::new()
        .file("layout/layout.c")
        .include(include)
        .flag_if_supported("-std=c11")
        .cargo_metadata(false)
        .compile("polylimit_sys_layout");
    let out = env::var("OUT_DIR").unwrap();
    println!("cargo:rustc-link-search=native={out}");
}
