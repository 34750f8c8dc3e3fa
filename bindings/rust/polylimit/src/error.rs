//! The `Error` type: its variants are generated from the vocabulary table.

use polylimit_sys as sys;
use std::ffi::CStr;
use std::fmt;

include!("vocabulary_gen.rs");

/// What the library said about a failed call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Detail {
    /// The raw `polylimit_status` (negative).
    pub code: i32,
    /// The failing system call's errno, or 0.
    pub sys_errno: i32,
    /// The call failed after its command was sent: it may have consumed units.
    pub outcome_unknown: bool,
    /// Names the argument or the cause; never holds a password (the core
    /// redacts URLs before they reach a message).
    pub message: String,
}

impl Error {
    /// The error a C call reported through its `polylimit_error`.
    pub(crate) fn from_c(status: i32, err: &sys::polylimit_error) -> Error {
        // SAFETY: the library always NUL-terminates message; the array is the
        // whole buffer, so a missing NUL would only make from_bytes fail.
        let bytes: &[u8] = unsafe { &*(&err.message as *const [std::ffi::c_char] as *const [u8]) };
        let message = CStr::from_bytes_until_nul(bytes)
            .map(|m| m.to_string_lossy().into_owned())
            .unwrap_or_default();
        Error::from_detail(Detail {
            code: status,
            sys_errno: err.sys_errno,
            outcome_unknown: err.outcome_unknown != 0,
            message,
        })
    }

    /// An error this binding raises itself, before calling the library.
    pub(crate) fn new(code: i32, message: impl Into<String>) -> Error {
        Error::from_detail(Detail {
            code,
            sys_errno: 0,
            outcome_unknown: false,
            message: message.into(),
        })
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Error {
        Error::new(-2, message)
    }

    /// The raw status code.
    pub fn code(&self) -> i32 {
        self.detail().code
    }

    /// The message, naming the argument or the cause.
    pub fn message(&self) -> &str {
        &self.detail().message
    }

    /// True when the call failed after its command was sent, so it may have
    /// consumed units (a timeout, a connection lost mid-call).
    pub fn outcome_unknown(&self) -> bool {
        self.detail().outcome_unknown
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = self.detail();
        if d.message.is_empty() {
            write!(f, "{} ({})", self.code_text(), self.code_name())
        } else {
            write!(f, "{}: {} ({})", self.code_text(), d.message, self.code_name())
        }
    }
}

impl std::error::Error for Error {}

/// Runs a C call with a fresh `polylimit_error` and turns its status into a Result.
pub(crate) fn call(f: impl FnOnce(*mut sys::polylimit_error) -> i32) -> Result<(), Error> {
    let mut err = sys::polylimit_error::default();
    let status = f(&mut err);
    if status == sys::POLYLIMIT_OK {
        Ok(())
    } else {
        Err(Error::from_c(status, &err))
    }
}
