//! The HTTP policy functions are declared with the parameter lists of
//! polylimit.h (each is coerced to its C prototype written as a Rust fn
//! pointer type), resolve in the linked library, and answer a refused
//! document and a prepared request through these declarations.

use core::ffi::{c_char, c_int, c_void};
use polylimit_sys::*;

type P = *const polylimit_http_policy;
type S = *const polylimit_http_step;
type D = *const polylimit_decision;
type E = *mut polylimit_error;

#[test]
fn http_functions_have_the_header_prototypes() {
    let fns: [(&str, *const c_void); 12] = [
        (
            "policy_new",
            (polylimit_http_policy_new
                as unsafe extern "C" fn(
                    *const c_char,
                    usize,
                    *const *mut polylimit_limiter,
                    usize,
                    *mut *mut polylimit_http_policy,
                    E,
                ) -> c_int) as *const c_void,
        ),
        (
            "policy_free",
            (polylimit_http_policy_free as unsafe extern "C" fn(*mut polylimit_http_policy)) as *const c_void,
        ),
        (
            "header_count",
            (polylimit_http_policy_header_count as unsafe extern "C" fn(P) -> usize) as *const c_void,
        ),
        (
            "header_name",
            (polylimit_http_policy_header_name as unsafe extern "C" fn(P, usize) -> *const c_char) as *const c_void,
        ),
        (
            "rule_count",
            (polylimit_http_policy_rule_count as unsafe extern "C" fn(P) -> usize) as *const c_void,
        ),
        (
            "rule_name",
            (polylimit_http_policy_rule_name as unsafe extern "C" fn(P, usize) -> *const c_char) as *const c_void,
        ),
        (
            "rule_limiter",
            (polylimit_http_policy_rule_limiter as unsafe extern "C" fn(P, usize) -> c_int) as *const c_void,
        ),
        (
            "prepare",
            (polylimit_http_prepare
                as unsafe extern "C" fn(P, *const polylimit_http_request, *mut polylimit_http_step, E) -> c_int)
                as *const c_void,
        ),
        (
            "answer",
            (polylimit_http_answer as unsafe extern "C" fn(P, S, D, *mut polylimit_http_response, E) -> c_int)
                as *const c_void,
        ),
        (
            "decide",
            (polylimit_http_decide
                as unsafe extern "C" fn(
                    P,
                    *const polylimit_http_request,
                    *mut polylimit_http_step,
                    *mut polylimit_decision,
                    *mut polylimit_http_response,
                    E,
                ) -> c_int) as *const c_void,
        ),
        (
            "refund_due",
            (polylimit_http_refund_due as unsafe extern "C" fn(P, S, D, c_int) -> c_int) as *const c_void,
        ),
        (
            "settle",
            (polylimit_http_settle as unsafe extern "C" fn(P, S, D, c_int, *mut c_int, E) -> c_int) as *const c_void,
        ),
    ];
    for (i, (name, p)) in fns.iter().enumerate() {
        assert!(!p.is_null(), "{name}");
        for (other, q) in &fns[i + 1..] {
            assert_ne!(p, q, "{name} and {other} resolve to one function");
        }
    }
    let metrics = (polylimit_http_policy_metrics_prometheus
        as unsafe extern "C" fn(P, *mut *mut c_char, *mut usize, E) -> c_int) as *const c_void;
    assert!(fns.iter().all(|(_, p)| *p != metrics));
}

/// A document with no limiters and one rule that exempts: parsed, then a
/// request is prepared (PROCEED) through the raw declarations; a broken
/// document is refused with a message.
#[test]
fn a_policy_through_the_raw_calls() {
    let mut err = polylimit_error::default();
    let mut policy: *mut polylimit_http_policy = core::ptr::null_mut();
    let bad = b"{\"rules\": [}";
    // SAFETY: the document is valid for the call; no limiters.
    let rc = unsafe {
        polylimit_http_policy_new(
            bad.as_ptr().cast(),
            bad.len(),
            core::ptr::null(),
            0,
            &mut policy,
            &mut err,
        )
    };
    assert_ne!(rc, POLYLIMIT_OK);
    assert!(policy.is_null());
    let doc = b"{\"rules\": [{\"name\": \"open\", \"limiter\": null}]}";
    // SAFETY: as above.
    let rc = unsafe {
        polylimit_http_policy_new(
            doc.as_ptr().cast(),
            doc.len(),
            core::ptr::null(),
            0,
            &mut policy,
            &mut err,
        )
    };
    assert_eq!(rc, POLYLIMIT_OK);
    // SAFETY: a live policy; the request's strings outlive the call.
    unsafe {
        assert_eq!(polylimit_http_policy_rule_count(policy), 1);
        assert_eq!(polylimit_http_policy_rule_limiter(policy, 0), -1);
        let s = |t: &'static str| polylimit_str {
            ptr: t.as_ptr().cast(),
            len: t.len(),
        };
        let req = polylimit_http_request {
            method: s("GET"),
            path: s("/"),
            peer: s("192.0.2.1"),
            ..Default::default()
        };
        let mut step = polylimit_http_step::default();
        assert_eq!(polylimit_http_prepare(policy, &req, &mut step, &mut err), POLYLIMIT_OK);
        assert_eq!(step.action, POLYLIMIT_HTTP_PROCEED);
        assert_eq!(step.rule, 0);
        polylimit_http_policy_free(policy);
    }
}
