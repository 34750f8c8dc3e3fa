//! The policy loading and live policy functions (polylimit_http_policy_load,
//! polylimit_http_live_*) are declared with the parameter lists of
//! polylimit.h (each coerced to its C prototype written as a Rust fn pointer
//! type), resolve in the linked library, and load, reload and refuse a
//! document through these declarations.

use core::ffi::{c_char, c_int, c_void};
use core::ptr;
use polylimit_sys::*;

type P = *const polylimit_http_policy;
type L = *const polylimit_http_live;
type E = *mut polylimit_error;
type Lims = *const *mut polylimit_limiter;

#[test]
fn live_functions_have_the_header_prototypes() {
    let fns: [(&str, *const c_void); 16] = [
        (
            "policy_load",
            (polylimit_http_policy_load
                as unsafe extern "C" fn(
                    *mut polylimit_client,
                    *const c_char,
                    usize,
                    Lims,
                    usize,
                    *mut *mut polylimit_http_policy,
                    E,
                ) -> c_int) as *const c_void,
        ),
        (
            "limiter_count",
            (polylimit_http_policy_limiter_count as unsafe extern "C" fn(P) -> usize) as *const c_void,
        ),
        (
            "policy_limiter",
            (polylimit_http_policy_limiter as unsafe extern "C" fn(P, usize, *mut *mut polylimit_limiter, E) -> c_int)
                as *const c_void,
        ),
        (
            "limiter_plan",
            (polylimit_http_policy_limiter_plan as unsafe extern "C" fn(P, usize) -> *const c_char) as *const c_void,
        ),
        (
            "resolver_timeout_ms",
            (polylimit_http_policy_resolver_timeout_ms as unsafe extern "C" fn(P) -> i64) as *const c_void,
        ),
        (
            "policy_id",
            (polylimit_http_policy_id as unsafe extern "C" fn(P) -> u64) as *const c_void,
        ),
        (
            "live_new",
            (polylimit_http_live_new
                as unsafe extern "C" fn(
                    *mut polylimit_client,
                    *const c_char,
                    usize,
                    Lims,
                    usize,
                    *mut *mut polylimit_http_live,
                    E,
                ) -> c_int) as *const c_void,
        ),
        (
            "live_open",
            (polylimit_http_live_open
                as unsafe extern "C" fn(
                    *mut polylimit_client,
                    *const c_char,
                    Lims,
                    usize,
                    c_int,
                    *mut *mut polylimit_http_live,
                    E,
                ) -> c_int) as *const c_void,
        ),
        (
            "live_free",
            (polylimit_http_live_free as unsafe extern "C" fn(*mut polylimit_http_live)) as *const c_void,
        ),
        (
            "live_current",
            (polylimit_http_live_current as unsafe extern "C" fn(L) -> *mut polylimit_http_policy) as *const c_void,
        ),
        (
            "live_reload",
            (polylimit_http_live_reload
                as unsafe extern "C" fn(*mut polylimit_http_live, *const c_char, usize, E) -> c_int)
                as *const c_void,
        ),
        (
            "live_reload_file",
            (polylimit_http_live_reload_file as unsafe extern "C" fn(*mut polylimit_http_live, E) -> c_int)
                as *const c_void,
        ),
        (
            "live_generation",
            (polylimit_http_live_generation as unsafe extern "C" fn(L) -> u64) as *const c_void,
        ),
        (
            "live_last_error",
            (polylimit_http_live_last_error as unsafe extern "C" fn(L, *mut *mut c_char, *mut usize, E) -> c_int)
                as *const c_void,
        ),
        (
            "live_cached_plan",
            (polylimit_http_live_cached_plan
                as unsafe extern "C" fn(L, *const c_char, usize, *mut c_char, usize) -> c_int)
                as *const c_void,
        ),
        (
            "live_cache_plan",
            (polylimit_http_live_cache_plan
                as unsafe extern "C" fn(
                    *mut polylimit_http_live,
                    *const c_char,
                    usize,
                    *const c_char,
                    usize,
                    E,
                ) -> c_int) as *const c_void,
        ),
    ];
    for (i, (name, p)) in fns.iter().enumerate() {
        assert!(!p.is_null(), "{name}");
        for (other, q) in &fns[i + 1..] {
            assert_ne!(p, q, "{name} and {other} resolve to one function");
        }
    }
    let metrics = (polylimit_http_live_metrics_prometheus
        as unsafe extern "C" fn(L, *mut *mut c_char, *mut usize, E) -> c_int) as *const c_void;
    assert!(fns.iter().all(|(_, p)| *p != metrics));
}

/// A live policy on a memory:// client with a limit of its own: the step
/// names the document's limiter, whose handle checks; a reload is counted,
/// a broken one refused naming its line; the plan cache answers.
#[test]
fn a_live_policy_through_the_raw_calls() {
    let mut err = polylimit_error::default();
    let mut client: *mut polylimit_client = ptr::null_mut();
    // SAFETY: every pointer is valid for its call; handles are freed once, at the end.
    unsafe {
        assert_eq!(
            polylimit_client_open(c"memory://".as_ptr(), ptr::null(), &mut client, &mut err),
            POLYLIMIT_OK
        );
        let doc = concat!(
            r#"{"rules": [{"name": "all", "key": "ip", "limit": "2/minute"}],"#,
            r#" "plans": {"free": {"all": "1/minute"}}, "default_plan": "free","#,
            r#" "resolver": {"timeout_ms": 50}}"#
        )
        .as_bytes();
        let mut live: *mut polylimit_http_live = ptr::null_mut();
        let rc = polylimit_http_live_new(
            client,
            doc.as_ptr().cast(),
            doc.len(),
            ptr::null(),
            0,
            &mut live,
            &mut err,
        );
        assert_eq!(rc, POLYLIMIT_OK);
        assert_eq!(polylimit_http_live_generation(live), 1);
        let policy = polylimit_http_live_current(live);
        assert!(!policy.is_null());
        assert_eq!(polylimit_http_policy_limiter_count(policy), 1);
        assert_eq!(polylimit_http_policy_resolver_timeout_ms(policy), 50);
        assert_ne!(polylimit_http_policy_id(policy), 0);
        let s = |t: &'static str| polylimit_str {
            ptr: t.as_ptr().cast(),
            len: t.len(),
        };
        let req = polylimit_http_request {
            method: s("GET"),
            path: s("/"),
            peer: s("192.0.2.1"),
            plan: s(""),
            ..Default::default()
        };
        let mut step = polylimit_http_step::default();
        assert_eq!(polylimit_http_prepare(policy, &req, &mut step, &mut err), POLYLIMIT_OK);
        assert_eq!(step.action, POLYLIMIT_HTTP_CHECK);
        assert_eq!(step.limiter, 0);
        let mut lim: *mut polylimit_limiter = ptr::null_mut();
        assert_eq!(
            polylimit_http_policy_limiter(policy, 0, &mut lim, &mut err),
            POLYLIMIT_OK
        );
        assert_ne!(
            polylimit_http_policy_limiter(policy, 1, &mut ptr::null_mut(), &mut err),
            POLYLIMIT_OK
        );
        polylimit_limiter_free(lim);
        // The rule's own limit: no plan.
        assert_eq!(
            core::ffi::CStr::from_ptr(polylimit_http_policy_limiter_plan(policy, 0)).to_bytes(),
            b""
        );
        assert!(polylimit_http_policy_limiter_plan(policy, 9).is_null());
        polylimit_http_policy_free(policy);

        let broken = b"{\"rules\": [{\"name\": \"all\",\n \"limit\": \"2/fortnight\"}]}";
        let rc = polylimit_http_live_reload(live, broken.as_ptr().cast(), broken.len(), &mut err);
        assert_eq!(rc, -2, "POLYLIMIT_EINVALID");
        let msg = core::ffi::CStr::from_ptr(err.message.as_ptr())
            .to_string_lossy()
            .into_owned();
        assert!(msg.contains("line 2"), "{msg}");
        assert_eq!(polylimit_http_live_generation(live), 1);
        let mut out: *mut c_char = ptr::null_mut();
        let mut len = 0usize;
        assert_eq!(
            polylimit_http_live_last_error(live, &mut out, &mut len, &mut err),
            POLYLIMIT_OK
        );
        assert!(len > 0);
        polylimit_free(out.cast());
        assert_eq!(
            polylimit_http_live_reload(live, doc.as_ptr().cast(), doc.len(), &mut err),
            POLYLIMIT_OK
        );
        assert_eq!(polylimit_http_live_generation(live), 2);

        let mut plan = [0 as c_char; 16];
        assert_eq!(
            polylimit_http_live_cached_plan(live, c"t".as_ptr(), 1, plan.as_mut_ptr(), plan.len()),
            0
        );
        assert_eq!(
            polylimit_http_live_cache_plan(live, c"t".as_ptr(), 1, c"pro".as_ptr(), 3, &mut err),
            POLYLIMIT_OK
        );
        assert_eq!(
            polylimit_http_live_cached_plan(live, c"t".as_ptr(), 1, plan.as_mut_ptr(), plan.len()),
            1
        );
        assert_eq!(core::ffi::CStr::from_ptr(plan.as_ptr()).to_bytes(), b"pro");

        let mut out: *mut c_char = ptr::null_mut();
        assert_eq!(
            polylimit_http_live_metrics_prometheus(live, &mut out, &mut len, &mut err),
            POLYLIMIT_OK
        );
        let m = String::from_utf8_lossy(core::slice::from_raw_parts(out.cast::<u8>(), len)).into_owned();
        polylimit_free(out.cast());
        assert!(m.contains("polylimit_http_policy_reloads_total"), "{m}");
        polylimit_http_live_free(live);
        polylimit_client_close(client);
    }
}
