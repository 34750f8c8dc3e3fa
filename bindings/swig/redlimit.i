/*
 * redlimit.i - SWIG interface over the C ABI (capi/include/redlimit.h).
 * Targets: Java (JNI, the main one) and Perl 5 (a thin raw module).
 *
 * The generated layer (Java package io.redlimit.jni, Perl package
 * RedlimitNative) mirrors the C functions one to one: every call returns the
 * rl_status code and never throws for a failed call; the idiomatic layer
 * (io.redlimit) turns codes into exceptions. The only Java exceptions raised
 * here are JVM-level ones (out of memory while copying an argument), raised
 * with a pending-exception return as JNI requires.
 *
 * Conventions applied below (Java; Perl differs where noted in its section):
 *  - rl_client / rl_limiter stay opaque pointers (SWIGTYPE_p_rl_client, ...).
 *  - "TYPE **out" becomes a one-element array of that pointer type.
 *  - "const void *key, size_t key_len" becomes byte[]; the bytes are copied
 *    for the duration of the call only, the Java array is never kept.
 *  - rl_decision / rl_error are read-only structs the caller allocates.
 *  - Option structs are built with their *_init() defaults, never calloc'd
 *    zeros (version 0 would be rejected).
 * The wrapper is compiled as C, so no C++ exception can reach a JNI frame, and
 * every C entry point is noexcept behind the ABI.
 */
%module RedlimitNative

%{
#include <stdlib.h>
#include <string.h>
#include "redlimit.h"

/* A borrowed byte range, returned to the target language as a fresh copy. */
typedef struct rl_bytes {
    const char *data;
    size_t len;
} rl_bytes;
%}

%include <stdint.i>

#ifdef SWIGJAVA
/* rl_status and friends become plain int constants: the functions return int. */
%include <enumtypeunsafe.swg>
%javaconst(1);
/* Java has no LL suffix; let these be read from C at class-load time instead. */
%javaconst(0) RL_MAX_LIMIT;
%javaconst(0) RL_MAX_WINDOW_MS;

/* Load the JNI library before the first native call of any generated class,
   and refuse a C library older than the header this was generated from. */
%pragma(java) jniclasscode=%{
  static {
    io.redlimit.NativeLibrary.link();
    io.redlimit.NativeLibrary.checkVersion(rl_version_number(), rl_version_string());
  }
%}
%pragma(java) jniclassclassmodifiers="public final class"
%pragma(java) moduleclassmodifiers="public final class"

/* No finalize() (deprecated for removal): proxies are freed explicitly with
   delete(), and the idiomatic layer registers a Cleaner as the safety net. */
%typemap(javafinalize) SWIGTYPE ""

/* ---- URL: Java String -> proper UTF-8 (not JNI's modified UTF-8) --------- */

%typemap(jni) const char *url "jbyteArray"
%typemap(jtype) const char *url "byte[]"
%typemap(jstype) const char *url "String"
%typemap(javain) const char *url
  "$javainput == null ? null : $javainput.getBytes(java.nio.charset.StandardCharsets.UTF_8)"
/* NUL-terminated copy; an embedded NUL ends the string early (the idiomatic
   layer rejects those before the call). A null String passes NULL. */
%typemap(in) const char *url {
  $1 = NULL;
  if ($input) {
    jsize n = (*jenv)->GetArrayLength(jenv, $input);
    char *copy = (char *)malloc((size_t)n + 1);
    if (!copy) {
      SWIG_JavaThrowException(jenv, SWIG_JavaOutOfMemoryError, "copying a URL");
      return $null;
    }
    (*jenv)->GetByteArrayRegion(jenv, $input, 0, n, (jbyte *)copy);
    copy[n] = '\0';
    $1 = copy;
  }
}
%typemap(freearg) const char *url {
  free((char *)$1);
}

/* ---- opaque handles: TYPE **out -> TYPE[] of length >= 1 ---------------- */

%define RL_HANDLE_OUT(TYPE)
%typemap(jni) TYPE **out "jlongArray"
%typemap(jtype) TYPE **out "long[]"
%typemap(jstype) TYPE **out "$*javaclassname[]"
/* A null or empty array passes NULL, and C answers RL_EINVALID "out is NULL". */
%typemap(javain,
         pre="    long[] temp$javainput = ($javainput != null && $javainput.length > 0) ? new long[1] : null;",
         post="      if (temp$javainput != null) $javainput[0] = temp$javainput[0] == 0 ? null : new $*javaclassname(temp$javainput[0], false);")
         TYPE **out "temp$javainput"
%typemap(in) TYPE **out (TYPE *handle = NULL) {
  $1 = $input ? &handle : NULL;
}
%typemap(argout) TYPE **out {
  if ($input) {
    jlong value = 0;
    *(TYPE **)&value = handle$argnum;
    (*jenv)->SetLongArrayRegion(jenv, $input, 0, 1, &value);
  }
}
%enddef

RL_HANDLE_OUT(rl_client)
RL_HANDLE_OUT(rl_limiter)

/* ---- binary keys: (const void *, size_t) <- byte[] ----------------------- */

%define RL_BYTES_IN(PTR, LEN)
%typemap(jni) (PTR, LEN) "jbyteArray"
%typemap(jtype) (PTR, LEN) "byte[]"
%typemap(jstype) (PTR, LEN) "byte[]"
%typemap(javain) (PTR, LEN) "$javainput"
/* Copy, don't pin: the call does network I/O, which must not happen inside a
   critical region, and the copy ends all use of the Java array right here.
   Short keys (the usual case) use the stack. A null array passes NULL / 0. */
%typemap(in) (PTR, LEN) (jbyte stackbuf[256], jbyte *heapbuf = NULL) {
  $1 = NULL;
  $2 = 0;
  if ($input) {
    jsize n = (*jenv)->GetArrayLength(jenv, $input);
    jbyte *buf = stackbuf;
    if ((size_t)n > sizeof stackbuf) {
      heapbuf = (jbyte *)malloc((size_t)n);
      if (!heapbuf) {
        SWIG_JavaThrowException(jenv, SWIG_JavaOutOfMemoryError, "copying a key");
        return $null;
      }
      buf = heapbuf;
    }
    (*jenv)->GetByteArrayRegion(jenv, $input, 0, n, buf);
    $1 = buf;
    $2 = (size_t)n;
  }
}
%typemap(freearg) (PTR, LEN) {
  free(heapbuf$argnum);
}
%enddef

RL_BYTES_IN(const void *key, size_t key_len)
RL_BYTES_IN(const void *bytes, size_t len)

/* ---- byte ranges out: rl_bytes -> byte[] --------------------------------- */

%typemap(jni) rl_bytes "jbyteArray"
%typemap(jtype) rl_bytes "byte[]"
%typemap(jstype) rl_bytes "byte[]"
%typemap(javaout) rl_bytes { return $jnicall; }
/* A byte[] rather than NewStringUTF: the message is C bytes, not necessarily
   modified UTF-8; Java decodes it with replacement characters if need be. */
%typemap(out) rl_bytes {
  $result = (*jenv)->NewByteArray(jenv, (jsize)$1.len);
  if ($result && $1.len)
    (*jenv)->SetByteArrayRegion(jenv, $result, 0, (jsize)$1.len, (const jbyte *)$1.data);
}

#endif /* SWIGJAVA */

#ifdef SWIGPERL
/* Perl: ($rc, $client) = RedlimitNative::rl_client_open($url, undef, $err);
   keys are byte strings (NUL allowed), borrowed for the call only. */

/* TYPE **out is no argument: the handle (or undef) joins the return list. */
%define RL_HANDLE_OUT(TYPE)
%typemap(in, numinputs=0) TYPE **out (TYPE *handle = NULL) {
  $1 = &handle;
}
%typemap(argout) TYPE **out {
  if (argvi >= items) EXTEND(sp, argvi + 1);
  $result = handle$argnum ? SWIG_NewPointerObj(handle$argnum, $*1_descriptor, 0) : sv_newmortal();
  argvi++;
}
%enddef

RL_HANDLE_OUT(rl_client)
RL_HANDLE_OUT(rl_limiter)

/* Byte strings; a string with characters above 0xFF dies ("Wide character"),
   as Perl's own byte APIs do; undef passes NULL / 0. */
%define RL_BYTES_IN(PTR, LEN)
%typemap(in) (PTR, LEN) {
  $1 = NULL;
  $2 = 0;
  if (SvOK($input)) {
    STRLEN n;
    $1 = ($1_ltype)SvPVbyte($input, n);
    $2 = (size_t)n;
  }
}
%enddef

RL_BYTES_IN(const void *key, size_t key_len)
RL_BYTES_IN(const void *bytes, size_t len)

%typemap(out) rl_bytes {
  $result = sv_2mortal(newSVpvn($1.data, $1.len));
  argvi++;
}

#endif /* SWIGPERL */

/* ---- structs ------------------------------------------------------------- */

/* Results: the caller reads them, only C writes them. */
%immutable rl_decision::allowed;
%immutable rl_decision::cached;
%immutable rl_decision::degraded;
%immutable rl_decision::limit;
%immutable rl_decision::remaining;
%immutable rl_decision::retry_after_ms;
%immutable rl_decision::reset_after_ms;
%ignore rl_decision::reserved_flags_;
%ignore rl_decision::reserved_;

%immutable rl_error::code;
%immutable rl_error::sys_errno;
%ignore rl_error::message;
%extend rl_error {
  rl_error() {
    rl_error *e = (rl_error *)malloc(sizeof *e);
    rl_error_clear(e);
    return e;
  }
  ~rl_error() { free($self); }
  /* The NUL-terminated message as bytes (never reads past the buffer). */
  rl_bytes messageBytes() {
    rl_bytes b;
    const char *end = (const char *)memchr($self->message, 0, sizeof $self->message);
    b.data = $self->message;
    b.len = end ? (size_t)(end - $self->message) : sizeof $self->message;
    return b;
  }
}

%immutable rl_client_options::version;
%extend rl_client_options {
  /* Defaults of this header's version; the C default of calloc would be 0. */
  rl_client_options() {
    rl_client_options *o = (rl_client_options *)malloc(sizeof *o);
    if (o) rl_client_options_init(o, RL_CLIENT_OPTIONS_VERSION);
    return o;
  }
  ~rl_client_options() { free($self); }
}

/* prefix is owned by the struct (copied in setPrefix, freed with it), which
   avoids SWIG's leaking default setter for const char * members. */
%immutable rl_limiter_options::version;
%ignore rl_limiter_options::prefix;
%extend rl_limiter_options {
  rl_limiter_options() {
    rl_limiter_options *o = (rl_limiter_options *)malloc(sizeof *o);
    if (o) rl_limiter_options_init(o, RL_LIMITER_OPTIONS_VERSION);
    return o;
  }
  ~rl_limiter_options() {
    free((char *)$self->prefix);
    free($self);
  }
  /* Sets the prefix from UTF-8 bytes; null resets it to the default.
     Returns RL_EINVALID for an embedded NUL, RL_ENOMEM, or RL_OK. */
  int setPrefix(const void *bytes, size_t len) {
    char *copy = NULL;
    if (bytes) {
      if (memchr(bytes, 0, len)) return RL_EINVALID;
      copy = (char *)malloc(len + 1);
      if (!copy) return RL_ENOMEM;
      memcpy(copy, bytes, len);
      copy[len] = '\0';
    }
    free((char *)$self->prefix);
    $self->prefix = copy;
    return RL_OK;
  }
}

/* Nothing in 1.x hands library memory to the caller; rl_free stays C-only. */
%ignore rl_free;

%include "redlimit.h"
