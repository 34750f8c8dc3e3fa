//! The non-blocking submit functions are declared with the parameter lists
//! of polylimit.h (each is coerced to its C prototype written as a Rust fn
//! pointer type) and resolve in the linked library. Pointer identity is all
//! this checks at run time; no call is made.

use core::ffi::{c_int, c_void};
use polylimit_sys::*;

type L = *mut polylimit_limiter;
type Q = *mut polylimit_queue;
type E = *mut polylimit_error;
type K = *const c_void;

#[test]
fn submit_functions_have_the_header_prototypes() {
    let fns: [(&str, *const c_void); 8] = [
        (
            "submit_check",
            (polylimit_limiter_submit_check as unsafe extern "C" fn(L, K, usize, i64, Q, u64, E) -> c_int)
                as *const c_void,
        ),
        (
            "submit_peek",
            (polylimit_limiter_submit_peek as unsafe extern "C" fn(L, K, usize, Q, u64, E) -> c_int) as *const c_void,
        ),
        (
            "submit_check_at_most",
            (polylimit_limiter_submit_check_at_most as unsafe extern "C" fn(L, K, usize, i64, Q, u64, E) -> c_int)
                as *const c_void,
        ),
        (
            "submit_check_limit",
            (polylimit_limiter_submit_check_limit
                as unsafe extern "C" fn(L, K, usize, i64, i64, i64, Q, u64, E) -> c_int) as *const c_void,
        ),
        (
            "submit_refund",
            (polylimit_limiter_submit_refund as unsafe extern "C" fn(L, K, usize, i64, Q, u64, E) -> c_int)
                as *const c_void,
        ),
        (
            "submit_reset",
            (polylimit_limiter_submit_reset as unsafe extern "C" fn(L, K, usize, Q, u64, E) -> c_int) as *const c_void,
        ),
        (
            "submit_acquire",
            (polylimit_limiter_submit_acquire as unsafe extern "C" fn(L, K, usize, i64, i64, Q, u64, E) -> c_int)
                as *const c_void,
        ),
        (
            "submit_check_many",
            (polylimit_limiter_submit_check_many
                as unsafe extern "C" fn(
                    L,
                    *const *const c_void,
                    *const usize,
                    usize,
                    i64,
                    *mut polylimit_decision,
                    *mut c_int,
                    *mut polylimit_error,
                    Q,
                    u64,
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
}

/// Argument errors come back at once and queue nothing (the submit
/// contract), through the declarations above.
#[test]
fn submit_with_no_queue_is_refused() {
    let mut err = polylimit_error::default();
    let key = b"k";
    // SAFETY: NULL limiter and queue are refused before any use.
    let rc = unsafe {
        polylimit_limiter_submit_peek(
            core::ptr::null_mut(),
            key.as_ptr().cast(),
            key.len(),
            core::ptr::null_mut(),
            1,
            &mut err,
        )
    };
    assert_ne!(rc, POLYLIMIT_OK);
    assert_eq!(err.code, rc);
    let mut statuses = [1 as c_int; 1];
    let keys = [key.as_ptr() as *const c_void];
    let lens = [key.len()];
    let mut out = [polylimit_decision::default(); 1];
    // SAFETY: as above; the arrays hold one element each.
    let rc = unsafe {
        polylimit_limiter_submit_check_many(
            core::ptr::null_mut(),
            keys.as_ptr(),
            lens.as_ptr(),
            1,
            1,
            out.as_mut_ptr(),
            statuses.as_mut_ptr(),
            core::ptr::null_mut(),
            core::ptr::null_mut(),
            1,
            &mut err,
        )
    };
    assert_ne!(rc, POLYLIMIT_OK);
    // No queue: refused before the arrays are looked at.
    assert_eq!(statuses, [1]);
}
