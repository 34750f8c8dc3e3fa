/*
 * polylimit.i - SWIG interface over the C ABI (capi/include/polylimit.h).
 * Targets: Java (JNI, the main one) and Perl 5 (a thin raw module).
 *
 * The generated layer (Java package io.polylimit.jni, Perl package
 * PolylimitNative) mirrors the C functions one to one: every call returns the
 * polylimit_status code and never throws for a failed call; the idiomatic layer
 * (io.polylimit) turns codes into exceptions. The only Java exceptions raised
 * here are JVM-level ones (out of memory while copying an argument), raised
 * with a pending-exception return as JNI requires.
 *
 * Conventions applied below (Java; Perl differs where noted in its section):
 *  - polylimit_client / polylimit_limiter stay opaque pointers (SWIGTYPE_p_polylimit_client, ...).
 *  - "TYPE **out" becomes a one-element array of that pointer type.
 *  - "const void *key, size_t key_len" becomes byte[]; the bytes are copied
 *    for the duration of the call only, the Java array is never kept.
 *  - polylimit_decision / polylimit_error are read-only structs the caller allocates.
 *  - Option structs are built with their *_init() defaults, never calloc'd
 *    zeros (version 0 would be rejected).
 *  - const char *url / *spec are passed as UTF-8 bytes (not modified UTF-8).
 *  - Batches: (keys, key_lens, n) is a byte[][] (every key copied); results
 *    come back in long[] / int[] the caller allocates, and each key's own
 *    error in a polylimit_error_list (polylimit_limiter_check_many_packed,
 *    polylimit_client_stats_packed, defined at the end). The packing order
 *    comes from the header's X-macros (POLYLIMIT_DECISION_FIELDS,
 *    POLYLIMIT_STATS_COUNTERS); Java reads it through the generated index
 *    constants POLYLIMIT_PACKED_DECISION_<field> / POLYLIMIT_PACKED_STATS_<counter>.
 *  - char **out, size_t *len (library memory) is a one-element byte[][]; the
 *    wrapper copies the string and releases it with polylimit_free.
 *  - Several clients (polylimit_clients_stats_prometheus) are a Java array of
 *    client handles; the C array of pointers lives for the call only.
 *  - Non-blocking checks: the uint64_t token is a Java long (same bits), and
 *    completions are polled into a polylimit_completion_batch (C memory, so
 *    the poll blocks with no Java array held), then copied out in one call
 *    (polylimit_queue_poll_batch, polylimit_completion_batch_unpack, at the end).
 *  - The string options of polylimit_client_options (name, tls_*) are owned
 *    by the struct (copied by their setters, freed with it), like the
 *    limiter prefix.
 * The wrapper is compiled as C, so no C++ exception can reach a JNI frame, and
 * every C entry point is noexcept behind the ABI.
 */
%module PolylimitNative

%{
#include <stdlib.h>
#include <string.h>
#include "polylimit.h"

/* A borrowed byte range, returned to the target language as a fresh copy. */
typedef struct polylimit_bytes {
    const char *data;
    size_t len;
} polylimit_bytes;

/* The texts of one HTTP policy call (Java): the step's key, then the
   answer's body, then its headers; their lengths are in the packed values. */
typedef struct polylimit_http_text {
    size_t len;
    char data[POLYLIMIT_HTTP_KEY_MAX + POLYLIMIT_HTTP_HEADERS_MAX + 256];
} polylimit_http_text;

/* Replaces the owned string *field with a NUL-terminated copy of bytes (NULL:
   unset). POLYLIMIT_EINVALID for an embedded NUL, POLYLIMIT_ENOMEM, or
   POLYLIMIT_OK. */
static int polylimit_swig_set_string(const char **field, const void *bytes, size_t len) {
    char *copy = NULL;
    if (bytes) {
        if (memchr(bytes, 0, len)) return POLYLIMIT_EINVALID;
        copy = (char *)malloc(len + 1);
        if (!copy) return POLYLIMIT_ENOMEM;
        memcpy(copy, bytes, len);
        copy[len] = '\0';
    }
    free((char *)*field);
    *field = copy;
    return POLYLIMIT_OK;
}
%}

%include <stdint.i>

#ifdef SWIGJAVA
/* polylimit_status and friends become plain int constants: the functions return int. */
%include <enumtypeunsafe.swg>
%javaconst(1);
/* The option bounds (POLYLIMIT_MIN_*, _MAX_*, _DEFAULT_*) are not wrapped for
   Java: their LL suffix is no Java literal, and the Java binding checks no
   range (the core does, with one message format). io.polylimit.Vocabulary,
   generated from the same table (capi/vocabulary/vocabulary.json), has them. */
%rename("$ignore", regextarget=1, %$isconstant) "^POLYLIMIT_(MIN|MAX|DEFAULT)_";

/* Load the JNI library before the first native call of any generated class,
   and refuse a C library older than the header this was generated from. */
%pragma(java) jniclasscode=%{
  static {
    io.polylimit.NativeLibrary.link();
    io.polylimit.NativeLibrary.checkVersion(polylimit_version_number(), polylimit_version_string());
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
/* Rate specs ("10/s; 1000/hour") take the same path. */
%apply const char *url { const char *spec };

/* ---- opaque handles: TYPE **out -> TYPE[] of length >= 1 ---------------- */

%define POLYLIMIT_HANDLE_OUT(TYPE)
%typemap(jni) TYPE **out "jlongArray"
%typemap(jtype) TYPE **out "long[]"
%typemap(jstype) TYPE **out "$*javaclassname[]"
/* A null or empty array passes NULL, and C answers POLYLIMIT_EINVALID "out is NULL". */
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

POLYLIMIT_HANDLE_OUT(polylimit_client)
POLYLIMIT_HANDLE_OUT(polylimit_limiter)
POLYLIMIT_HANDLE_OUT(polylimit_queue)
POLYLIMIT_HANDLE_OUT(polylimit_http_policy)

/* Tokens are opaque to C, so the signed jlong's bits serve as they are:
   no BigInteger (stdint.i's uint64_t) per check. */
%apply int64_t { uint64_t token };

/* Java polls through polylimit_queue_poll_batch (at the end) instead. */
%ignore polylimit_queue_poll;

/* ---- binary keys: (const void *, size_t) <- byte[] ----------------------- */

%define POLYLIMIT_BYTES_IN(PTR, LEN)
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

POLYLIMIT_BYTES_IN(const void *key, size_t key_len)
POLYLIMIT_BYTES_IN(const void *bytes, size_t len)

/* ---- byte ranges out: polylimit_bytes -> byte[] --------------------------------- */

%typemap(jni) polylimit_bytes "jbyteArray"
%typemap(jtype) polylimit_bytes "byte[]"
%typemap(jstype) polylimit_bytes "byte[]"
%typemap(javaout) polylimit_bytes { return $jnicall; }
/* A byte[] rather than NewStringUTF: the message is C bytes, not necessarily
   modified UTF-8; Java decodes it with replacement characters if need be. */
%typemap(out) polylimit_bytes {
  $result = (*jenv)->NewByteArray(jenv, (jsize)$1.len);
  if ($result && $1.len)
    (*jenv)->SetByteArrayRegion(jenv, $result, 0, (jsize)$1.len, (const jbyte *)$1.data);
}


/* ---- batches: byte[][] -> (keys, key_lens, n) ---------------------------- */

/* Every key is copied (see the single-key typemap for why); a null element
   passes NULL / 0, which C rejects for that key alone. */
%typemap(jni) (const void *const *keys, const size_t *key_lens, size_t n) "jobjectArray"
%typemap(jtype) (const void *const *keys, const size_t *key_lens, size_t n) "byte[][]"
%typemap(jstype) (const void *const *keys, const size_t *key_lens, size_t n) "byte[][]"
%typemap(javain) (const void *const *keys, const size_t *key_lens, size_t n) "$javainput"
%typemap(in) (const void *const *keys, const size_t *key_lens, size_t n)
    (void **copies = NULL, size_t *lens = NULL, size_t count = 0) {
  $1 = NULL;
  $2 = NULL;
  $3 = 0;
  if ($input) {
    jsize total = (*jenv)->GetArrayLength(jenv, $input);
    jsize i;
    copies = (void **)calloc((size_t)total + 1, sizeof *copies);
    lens = (size_t *)calloc((size_t)total + 1, sizeof *lens);
    if (!copies || !lens) {
      free(copies);
      free(lens);
      SWIG_JavaThrowException(jenv, SWIG_JavaOutOfMemoryError, "copying keys");
      return $null;
    }
    count = (size_t)total;
    for (i = 0; i < total; i++) {
      jbyteArray k = (jbyteArray)(*jenv)->GetObjectArrayElement(jenv, $input, i);
      if (!k) continue;
      {
        jsize len = (*jenv)->GetArrayLength(jenv, k);
        copies[i] = malloc((size_t)len + 1);
        if (!copies[i]) {
          size_t j;
          for (j = 0; j < (size_t)i; j++) free(copies[j]);
          free(copies);
          free(lens);
          SWIG_JavaThrowException(jenv, SWIG_JavaOutOfMemoryError, "copying keys");
          return $null;
        }
        (*jenv)->GetByteArrayRegion(jenv, k, 0, len, (jbyte *)copies[i]);
        lens[i] = (size_t)len;
      }
      (*jenv)->DeleteLocalRef(jenv, k);
    }
    $1 = ($1_ltype)copies;
    $2 = lens;
    $3 = count;
  }
}
%typemap(freearg) (const void *const *keys, const size_t *key_lens, size_t n) {
  if (copies$argnum) {
    size_t i;
    for (i = 0; i < count$argnum; i++) free(copies$argnum[i]);
  }
  free(copies$argnum);
  free(lens$argnum);
}

/* ---- results out: long[] / int[] filled by C ----------------------------- */

%define POLYLIMIT_ARRAY_OUT(CTYPE, NAME, LEN, JNITYPE, JNIARRAY, JAVATYPE, JNAME)
%typemap(jni) (CTYPE *NAME, size_t LEN) JNIARRAY
%typemap(jtype) (CTYPE *NAME, size_t LEN) JAVATYPE
%typemap(jstype) (CTYPE *NAME, size_t LEN) JAVATYPE
%typemap(javain) (CTYPE *NAME, size_t LEN) "$javainput"
%typemap(in) (CTYPE *NAME, size_t LEN) {
  $1 = NULL;
  $2 = 0;
  if ($input) {
    $1 = (CTYPE *)(*jenv)->Get##JNAME##ArrayElements(jenv, $input, NULL);
    if (!$1) return $null; /* OutOfMemoryError is pending */
    $2 = (size_t)(*jenv)->GetArrayLength(jenv, $input);
  }
}
/* Mode 0: copy back (if it was a copy) and release, on every path. */
%typemap(freearg) (CTYPE *NAME, size_t LEN) {
  if ($1) (*jenv)->Release##JNAME##ArrayElements(jenv, $input, (JNITYPE *)$1, 0);
}
%enddef

POLYLIMIT_ARRAY_OUT(int64_t, values, values_len, jlong, "jlongArray", "long[]", Long)
POLYLIMIT_ARRAY_OUT(int, codes, codes_len, jint, "jintArray", "int[]", Int)
POLYLIMIT_ARRAY_OUT(int64_t, tokens, tokens_len, jlong, "jlongArray", "long[]", Long)

/* ---- several clients: SWIGTYPE_p_polylimit_client[] -> (clients, n) ------- */

/* The handles travel as their addresses (getCPtr is visible to the generated
   module class, which is where javain runs); a null element passes NULL,
   which C rejects naming clients[i]. A null array passes NULL / 0. */
%typemap(jni) (polylimit_client *const *clients, size_t n) "jlongArray"
%typemap(jtype) (polylimit_client *const *clients, size_t n) "long[]"
%typemap(jstype) (polylimit_client *const *clients, size_t n) "SWIGTYPE_p_polylimit_client[]"
%typemap(javain,
         pre="    long[] ptrs$javainput = null;\n"
             "    if ($javainput != null) {\n"
             "      ptrs$javainput = new long[$javainput.length];\n"
             "      for (int i = 0; i < $javainput.length; i++)\n"
             "        ptrs$javainput[i] = SWIGTYPE_p_polylimit_client.getCPtr($javainput[i]);\n"
             "    }")
         (polylimit_client *const *clients, size_t n) "ptrs$javainput"
%typemap(in) (polylimit_client *const *clients, size_t n) (polylimit_client **handles = NULL) {
  $1 = NULL;
  $2 = 0;
  if ($input) {
    jsize count = (*jenv)->GetArrayLength(jenv, $input);
    jsize i;
    jlong *ptrs = (*jenv)->GetLongArrayElements(jenv, $input, NULL);
    if (!ptrs) return $null; /* OutOfMemoryError is pending */
    handles = (polylimit_client **)calloc((size_t)count + 1, sizeof *handles);
    if (!handles) {
      (*jenv)->ReleaseLongArrayElements(jenv, $input, ptrs, JNI_ABORT);
      SWIG_JavaThrowException(jenv, SWIG_JavaOutOfMemoryError, "copying the clients");
      return $null;
    }
    for (i = 0; i < count; i++) handles[i] = *(polylimit_client **)&ptrs[i];
    (*jenv)->ReleaseLongArrayElements(jenv, $input, ptrs, JNI_ABORT);
    $1 = handles;
    $2 = (size_t)count;
  }
}
%typemap(freearg) (polylimit_client *const *clients, size_t n) {
  free(handles$argnum);
}

/* ---- several limiters: SWIGTYPE_p_polylimit_limiter[] -> (limiters, n_limiters) */

/* As the clients above: the handles travel as their addresses, the C array
   lives for the call only; a null element passes NULL (C rejects it). */
%typemap(jni) (polylimit_limiter *const *limiters, size_t n_limiters) "jlongArray"
%typemap(jtype) (polylimit_limiter *const *limiters, size_t n_limiters) "long[]"
%typemap(jstype) (polylimit_limiter *const *limiters, size_t n_limiters) "SWIGTYPE_p_polylimit_limiter[]"
%typemap(javain,
         pre="    long[] ptrs$javainput = null;\n"
             "    if ($javainput != null) {\n"
             "      ptrs$javainput = new long[$javainput.length];\n"
             "      for (int i = 0; i < $javainput.length; i++)\n"
             "        ptrs$javainput[i] = SWIGTYPE_p_polylimit_limiter.getCPtr($javainput[i]);\n"
             "    }")
         (polylimit_limiter *const *limiters, size_t n_limiters) "ptrs$javainput"
%typemap(in) (polylimit_limiter *const *limiters, size_t n_limiters) (polylimit_limiter **lhandles = NULL) {
  $1 = NULL;
  $2 = 0;
  if ($input) {
    jsize count = (*jenv)->GetArrayLength(jenv, $input);
    jsize i;
    jlong *ptrs = (*jenv)->GetLongArrayElements(jenv, $input, NULL);
    if (!ptrs) return $null; /* OutOfMemoryError is pending */
    lhandles = (polylimit_limiter **)calloc((size_t)count + 1, sizeof *lhandles);
    if (!lhandles) {
      (*jenv)->ReleaseLongArrayElements(jenv, $input, ptrs, JNI_ABORT);
      SWIG_JavaThrowException(jenv, SWIG_JavaOutOfMemoryError, "copying the limiters");
      return $null;
    }
    for (i = 0; i < count; i++) lhandles[i] = *(polylimit_limiter **)&ptrs[i];
    (*jenv)->ReleaseLongArrayElements(jenv, $input, ptrs, JNI_ABORT);
    $1 = lhandles;
    $2 = (size_t)count;
  }
}
%typemap(freearg) (polylimit_limiter *const *limiters, size_t n_limiters) {
  free(lhandles$argnum);
}

/* ---- the HTTP policy's texts: polylimit_http_text * -> byte[][] of length >= 1 */

/* The step's key, the answer's body and headers, one after the other (their
   lengths are in the packed values): the buffer is on the C stack, and one
   byte[] of exactly their size comes back in element 0 (left alone when
   there is no text). */
%typemap(jni) polylimit_http_text *text "jobjectArray"
%typemap(jtype) polylimit_http_text *text "byte[][]"
%typemap(jstype) polylimit_http_text *text "byte[][]"
%typemap(javain) polylimit_http_text *text "$javainput"
%typemap(in) polylimit_http_text *text (polylimit_http_text buf) {
  buf.len = 0;
  $1 = $input ? &buf : NULL;
}
%typemap(argout) polylimit_http_text *text {
  if ($input && buf$argnum.len > 0 && (*jenv)->GetArrayLength(jenv, $input) > 0) {
    jbyteArray b = (*jenv)->NewByteArray(jenv, (jsize)buf$argnum.len);
    if (!b) return $null; /* OutOfMemoryError is pending */
    (*jenv)->SetByteArrayRegion(jenv, b, 0, (jsize)buf$argnum.len, (const jbyte *)buf$argnum.data);
    (*jenv)->SetObjectArrayElement(jenv, $input, 0, b);
    (*jenv)->DeleteLocalRef(jenv, b);
  }
}

/* ---- library-allocated strings: char **out -> byte[][] of length >= 1 ---- */

%typemap(jni) (char **out, size_t *len) "jobjectArray"
%typemap(jtype) (char **out, size_t *len) "byte[][]"
%typemap(jstype) (char **out, size_t *len) "byte[][]"
%typemap(javain) (char **out, size_t *len) "$javainput"
%typemap(in) (char **out, size_t *len) (char *text = NULL, size_t text_len = 0) {
  $1 = $input ? &text : NULL;
  $2 = &text_len;
}
%typemap(argout) (char **out, size_t *len) {
  if ($input && text$argnum && (*jenv)->GetArrayLength(jenv, $input) > 0) {
    jbyteArray b = (*jenv)->NewByteArray(jenv, (jsize)text_len$argnum);
    if (!b) { /* OutOfMemoryError is pending; freearg would be skipped */
      polylimit_free(text$argnum);
      return $null;
    }
    (*jenv)->SetByteArrayRegion(jenv, b, 0, (jsize)text_len$argnum, (const jbyte *)text$argnum);
    (*jenv)->SetObjectArrayElement(jenv, $input, 0, b);
    (*jenv)->DeleteLocalRef(jenv, b);
  }
}
%typemap(freearg) (char **out, size_t *len) {
  polylimit_free(text$argnum);
}

#endif /* SWIGJAVA */

#ifdef SWIGPERL
/* Perl: ($rc, $client) = PolylimitNative::polylimit_client_open($url, undef, $err);
   keys are byte strings (NUL allowed), borrowed for the call only. */

/* TYPE **out is no argument: the handle (or undef) joins the return list. */
%define POLYLIMIT_HANDLE_OUT(TYPE)
%typemap(in, numinputs=0) TYPE **out (TYPE *handle = NULL) {
  $1 = &handle;
}
%typemap(argout) TYPE **out {
  if (argvi >= items) EXTEND(sp, argvi + 1);
  $result = handle$argnum ? SWIG_NewPointerObj(handle$argnum, $*1_descriptor, 0) : sv_newmortal();
  argvi++;
}
%enddef

POLYLIMIT_HANDLE_OUT(polylimit_client)
POLYLIMIT_HANDLE_OUT(polylimit_limiter)
POLYLIMIT_HANDLE_OUT(polylimit_queue)

/* Byte strings; a string with characters above 0xFF dies ("Wide character"),
   as Perl's own byte APIs do; undef passes NULL / 0. */
%define POLYLIMIT_BYTES_IN(PTR, LEN)
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

POLYLIMIT_BYTES_IN(const void *key, size_t key_len)
POLYLIMIT_BYTES_IN(const void *bytes, size_t len)

%typemap(out) polylimit_bytes {
  $result = sv_2mortal(newSVpvn($1.data, $1.len));
  argvi++;
}

/* ($rc, $text) = polylimit_client_stats_prometheus($client, $err): the library's
   string joins the return list (undef on failure) and is freed here. */
%typemap(in, numinputs=0) (char **out, size_t *len) (char *text = NULL, size_t text_len = 0) {
  $1 = &text;
  $2 = &text_len;
}
%typemap(argout) (char **out, size_t *len) {
  if (argvi >= items) EXTEND(sp, argvi + 1);
  $result = text$argnum ? sv_2mortal(newSVpvn(text$argnum, text_len$argnum)) : sv_newmortal();
  argvi++;
}
%typemap(freearg) (char **out, size_t *len) {
  polylimit_free(text$argnum);
}

/* Perl has no array of client handles yet: one client per page
   (polylimit_client_stats_prometheus). */
%ignore polylimit_clients_stats_prometheus;

#endif /* SWIGPERL */

/* ---- structs ------------------------------------------------------------- */

/* Reserved fields (reserved_, reserved_flags_, ... in any struct) are room for
   later versions, not API. */
%rename("$ignore", regextarget=1, %$isvariable) "^reserved.*_$";

/* Results: the caller reads them, only C writes them. */
%immutable polylimit_decision::allowed;
%immutable polylimit_decision::cached;
%immutable polylimit_decision::degraded;
%immutable polylimit_decision::limit;
%immutable polylimit_decision::remaining;
%immutable polylimit_decision::retry_after_ms;
%immutable polylimit_decision::reset_after_ms;
%immutable polylimit_decision::shadowed;
%immutable polylimit_decision::granted;

%immutable polylimit_error::code;
%immutable polylimit_error::sys_errno;
%immutable polylimit_error::outcome_unknown;
%ignore polylimit_error::message;
%extend polylimit_error {
  polylimit_error() {
    polylimit_error *e = (polylimit_error *)malloc(sizeof *e);
    polylimit_error_clear(e);
    return e;
  }
  ~polylimit_error() { free($self); }
  /* The NUL-terminated message as bytes (never reads past the buffer). */
  polylimit_bytes messageBytes() {
    polylimit_bytes b;
    const char *end = (const char *)memchr($self->message, 0, sizeof $self->message);
    b.data = $self->message;
    b.len = end ? (size_t)(end - $self->message) : sizeof $self->message;
    return b;
  }
}

%immutable polylimit_client_options::version;
/* The strings are owned by the struct: set with the setters below (a copy;
   null unsets), freed with it. SWIG's default setters would leak. */
%ignore polylimit_client_options::name;
%ignore polylimit_client_options::tls_ca_file;
%ignore polylimit_client_options::tls_ca_dir;
%ignore polylimit_client_options::tls_cert_file;
%ignore polylimit_client_options::tls_key_file;
%ignore polylimit_client_options::tls_server_name;
%extend polylimit_client_options {
  /* Defaults of this header's version; the C default of calloc would be 0. */
  polylimit_client_options() {
    polylimit_client_options *o = (polylimit_client_options *)malloc(sizeof *o);
    if (o) polylimit_client_options_init(o, POLYLIMIT_CLIENT_OPTIONS_VERSION);
    return o;
  }
  ~polylimit_client_options() {
    free((char *)$self->name);
    free((char *)$self->tls_ca_file);
    free((char *)$self->tls_ca_dir);
    free((char *)$self->tls_cert_file);
    free((char *)$self->tls_key_file);
    free((char *)$self->tls_server_name);
    free($self);
  }
  /* Each sets its string from UTF-8 bytes (null: unset). Returns
     POLYLIMIT_EINVALID for an embedded NUL, POLYLIMIT_ENOMEM, or POLYLIMIT_OK. */
  int setName(const void *bytes, size_t len) { return polylimit_swig_set_string(&$self->name, bytes, len); }
  int setTlsCaFile(const void *bytes, size_t len) { return polylimit_swig_set_string(&$self->tls_ca_file, bytes, len); }
  int setTlsCaDir(const void *bytes, size_t len) { return polylimit_swig_set_string(&$self->tls_ca_dir, bytes, len); }
  int setTlsCertFile(const void *bytes, size_t len) {
    return polylimit_swig_set_string(&$self->tls_cert_file, bytes, len);
  }
  int setTlsKeyFile(const void *bytes, size_t len) { return polylimit_swig_set_string(&$self->tls_key_file, bytes, len); }
  int setTlsServerName(const void *bytes, size_t len) {
    return polylimit_swig_set_string(&$self->tls_server_name, bytes, len);
  }
}

/* prefix is owned by the struct (copied in setPrefix, freed with it), which
   avoids SWIG's leaking default setter for const char * members. */
%immutable polylimit_limiter_options::version;
%ignore polylimit_limiter_options::prefix;
%extend polylimit_limiter_options {
  polylimit_limiter_options() {
    polylimit_limiter_options *o = (polylimit_limiter_options *)malloc(sizeof *o);
    if (o) polylimit_limiter_options_init(o, POLYLIMIT_LIMITER_OPTIONS_VERSION);
    return o;
  }
  ~polylimit_limiter_options() {
    free((char *)$self->prefix);
    free($self);
  }
  /* Sets the prefix from UTF-8 bytes; null resets it to the default.
     Returns POLYLIMIT_EINVALID for an embedded NUL, POLYLIMIT_ENOMEM, or POLYLIMIT_OK. */
  int setPrefix(const void *bytes, size_t len) { return polylimit_swig_set_string(&$self->prefix, bytes, len); }
}

/* Counters: the caller allocates (with the version set), C fills. The two
   histogram arrays are read one bucket at a time. */
%immutable polylimit_stats::version;
%ignore polylimit_stats::latency_le_us;
%ignore polylimit_stats::latency_buckets;
%extend polylimit_stats {
  polylimit_stats() {
    polylimit_stats *s = (polylimit_stats *)calloc(1, sizeof *s);
    if (s) s->version = POLYLIMIT_STATS_VERSION;
    return s;
  }
  ~polylimit_stats() { free($self); }
  /* Upper bound (us) of bucket i; the last is UINT64_MAX (+Inf). 0 out of range. */
  uint64_t latencyLeUs(int i) {
    return i >= 0 && i < POLYLIMIT_STATS_LATENCY_BUCKETS ? $self->latency_le_us[i] : 0;
  }
  /* Checks in bucket i (not cumulative). 0 out of range. */
  uint64_t latencyBucket(int i) {
    return i >= 0 && i < POLYLIMIT_STATS_LATENCY_BUCKETS ? $self->latency_buckets[i] : 0;
  }
}

/* The only library memory handed over (polylimit_client_stats_prometheus) is freed
   by the typemaps above; polylimit_free itself stays C-only. */
%ignore polylimit_free;

/* The raw polylimit_limiter_check_many takes arrays of pointers and structs; Java calls the
   packed form at the end instead (one JNI call, one pipelined round trip);
   Perl has no batch call yet. */
%ignore polylimit_limiter_check_many;

#ifdef SWIGJAVA
/* The HTTP request policy: Java calls the packed forms at the end (one JNI
   call per step, the request's strings copied in one byte[][], no C struct
   per request); the raw request, step and response structs stay C-only. */
%ignore polylimit_str;
%ignore polylimit_http_request;
%ignore polylimit_http_step;
%ignore polylimit_http_response;
%ignore polylimit_http_policy_new;
%ignore polylimit_http_prepare;
%ignore polylimit_http_answer;
%ignore polylimit_http_decide;
%ignore polylimit_http_refund_due;
%ignore polylimit_http_settle;
#endif

/* ==== live policy (Java), declarations: begin ===========================
   The live policy (polylimit_http_live_*) and documents with their own
   limits (polylimit_http_policy_load): the handle comes back as the other
   handles do; the calls taking a document, a path, a tenant or a plan as
   (const char *, size_t) are called through their packed forms at the end
   (byte[] in, copied for the call). */
#ifdef SWIGJAVA
POLYLIMIT_HANDLE_OUT(polylimit_http_live)
%ignore polylimit_http_policy_load;
%ignore polylimit_http_live_new;
%ignore polylimit_http_live_open;
%ignore polylimit_http_live_reload;
%ignore polylimit_http_live_cached_plan;
%ignore polylimit_http_live_cache_plan;
#endif
/* ==== live policy (Java), declarations: end ============================= */

%include "polylimit.h"

#ifdef SWIGJAVA
/* Each key's own error of a batch: the caller allocates one per key and reads
   them back one at a time (code, errno, outcome_unknown, message bytes). An index out of range
   reads as POLYLIMIT_OK with an empty message. */
%immutable polylimit_error_list::n;
%ignore polylimit_error_list::items;
%extend polylimit_error_list {
  polylimit_error_list(int n) {
    size_t count = n > 0 ? (size_t)n : 0;
    polylimit_error_list *l = (polylimit_error_list *)malloc(sizeof *l);
    if (!l) return NULL;
    l->items = (polylimit_error *)calloc(count ? count : 1, sizeof *l->items);
    if (!l->items) {
      free(l);
      return NULL;
    }
    l->n = count;
    return l;
  }
  ~polylimit_error_list() {
    free($self->items);
    free($self);
  }
  int code(int i) {
    return i >= 0 && (size_t)i < $self->n ? $self->items[i].code : POLYLIMIT_OK;
  }
  int sysErrno(int i) {
    return i >= 0 && (size_t)i < $self->n ? $self->items[i].sys_errno : 0;
  }
  int outcomeUnknown(int i) {
    return i >= 0 && (size_t)i < $self->n ? $self->items[i].outcome_unknown : 0;
  }
  /* The NUL-terminated message of key i as bytes. */
  polylimit_bytes messageBytes(int i) {
    polylimit_bytes b = { "", 0 };
    if (i >= 0 && (size_t)i < $self->n) {
      const char *m = $self->items[i].message;
      const char *end = (const char *)memchr(m, 0, sizeof $self->items[i].message);
      b.data = m;
      b.len = end ? (size_t)(end - m) : sizeof $self->items[i].message;
    }
    return b;
  }
}
/* A failed allocation is an OutOfMemoryError, not a proxy around NULL. */
%exception polylimit_error_list::polylimit_error_list {
  $action
  if (!result) {
    SWIG_JavaThrowException(jenv, SWIG_JavaOutOfMemoryError, "allocating the per-key errors");
    return $null;
  }
}

%inline %{
/* polylimit_limiter_check_many_packed writes each decision as
   POLYLIMIT_PACKED_DECISION longs, the fields of polylimit_decision in the
   order of POLYLIMIT_DECISION_FIELDS; POLYLIMIT_PACKED_DECISION_<field> is
   the index of each (generated from the same X-macro, so the order cannot
   drift). */
#define POLYLIMIT_PACKED_DECISION_INDEX_(name) POLYLIMIT_PACKED_DECISION_##name,
enum { POLYLIMIT_DECISION_FIELDS(POLYLIMIT_PACKED_DECISION_INDEX_) POLYLIMIT_PACKED_DECISION };
#undef POLYLIMIT_PACKED_DECISION_INDEX_

/* polylimit_client_stats_packed writes the counters of polylimit_stats in the
   order of POLYLIMIT_STATS_COUNTERS (index POLYLIMIT_PACKED_STATS_<counter>),
   then the POLYLIMIT_STATS_LATENCY_BUCKETS bucket bounds from
   POLYLIMIT_PACKED_STATS_LATENCY_LE_US (UINT64_MAX clamped to INT64_MAX), then
   the bucket counts from POLYLIMIT_PACKED_STATS_LATENCY_BUCKETS:
   POLYLIMIT_PACKED_STATS longs in all. */
#define POLYLIMIT_PACKED_STATS_INDEX_(name) POLYLIMIT_PACKED_STATS_##name,
enum { POLYLIMIT_STATS_COUNTERS(POLYLIMIT_PACKED_STATS_INDEX_) POLYLIMIT_PACKED_STATS_LATENCY_LE_US };
#undef POLYLIMIT_PACKED_STATS_INDEX_
enum {
  POLYLIMIT_PACKED_STATS_LATENCY_BUCKETS = POLYLIMIT_PACKED_STATS_LATENCY_LE_US + POLYLIMIT_STATS_LATENCY_BUCKETS,
  POLYLIMIT_PACKED_STATS = POLYLIMIT_PACKED_STATS_LATENCY_BUCKETS + POLYLIMIT_STATS_LATENCY_BUCKETS
};

/* The polylimit_error list of a batch, one per key (see the %extend above). */
typedef struct polylimit_error_list {
  polylimit_error *items;
  size_t n;
} polylimit_error_list;

/* polylimit_limiter_check_many with the decisions packed into values
   (n * POLYLIMIT_PACKED_DECISION longs), the per-key statuses in codes (n ints)
   and, unless key_errors is NULL, each key's own code and message in
   key_errors (at least n). A key whose status is not POLYLIMIT_OK leaves its
   longs untouched; when the call fails before any key (n too large, short
   arrays), codes is untouched too. Returns what polylimit_limiter_check_many
   returns. */
int polylimit_limiter_check_many_packed(polylimit_limiter *limiter, const void *const *keys, const size_t *key_lens,
                                        size_t n, int64_t cost, int64_t *values, size_t values_len, int *codes,
                                        size_t codes_len, polylimit_error_list *key_errors, polylimit_error *err) {
  polylimit_decision *d;
  size_t i;
  int rc;
  if (err) polylimit_error_clear(err);
  if (n > 0 && (!values || values_len / POLYLIMIT_PACKED_DECISION < n || !codes || codes_len < n ||
                (key_errors && key_errors->n < n))) {
    if (err) {
      err->code = POLYLIMIT_EINVALID;
      strcpy(err->message, "values, codes or key_errors is too short for the keys");
    }
    return POLYLIMIT_EINVALID;
  }
  d = (polylimit_decision *)calloc(n ? n : 1, sizeof *d);
  if (!d) {
    if (err) {
      err->code = POLYLIMIT_ENOMEM;
      strcpy(err->message, "out of memory for the decisions");
    }
    return POLYLIMIT_ENOMEM;
  }
  rc = polylimit_limiter_check_many(limiter, keys, key_lens, n, cost, d, codes,
                                    key_errors ? key_errors->items : NULL, err);
  for (i = 0; i < n; i++) {
    int64_t *v = values + i * POLYLIMIT_PACKED_DECISION;
    if (codes[i] != POLYLIMIT_OK) continue;
#define POLYLIMIT_PACK_(name) v[POLYLIMIT_PACKED_DECISION_##name] = (int64_t)d[i].name;
    POLYLIMIT_DECISION_FIELDS(POLYLIMIT_PACK_)
#undef POLYLIMIT_PACK_
  }
  free(d);
  return rc;
}

/* polylimit_limiter_headers for a decision given as its packed fields
   (POLYLIMIT_PACKED_DECISION longs, as polylimit_limiter_check_many_packed
   writes them): Java's Decision is a value, not a C struct. */
int polylimit_limiter_headers_packed(polylimit_limiter *limiter, int64_t *values, size_t values_len, char **out,
                                     size_t *len, polylimit_error *err) {
  polylimit_decision d;
  if (!values || values_len < POLYLIMIT_PACKED_DECISION) {
    if (err) {
      polylimit_error_clear(err);
      err->code = POLYLIMIT_EINVALID;
      strcpy(err->message, "values is too short for a decision");
    }
    return POLYLIMIT_EINVALID;
  }
  memset(&d, 0, sizeof d);
#define POLYLIMIT_UNPACK_(name) d.name = values[POLYLIMIT_PACKED_DECISION_##name];
  POLYLIMIT_DECISION_FIELDS(POLYLIMIT_UNPACK_)
#undef POLYLIMIT_UNPACK_
  return polylimit_limiter_headers(limiter, &d, out, len, err);
}

/* polylimit_client_stats into POLYLIMIT_PACKED_STATS longs (no unsigned type in Java). */
int polylimit_client_stats_packed(polylimit_client *client, int64_t *values, size_t values_len, polylimit_error *err) {
  polylimit_stats s = POLYLIMIT_STATS_INIT;
  int rc, i;
  if (!values || values_len < POLYLIMIT_PACKED_STATS) {
    if (err) {
      polylimit_error_clear(err);
      err->code = POLYLIMIT_EINVALID;
      strcpy(err->message, "values is too short for the counters");
    }
    return POLYLIMIT_EINVALID;
  }
  rc = polylimit_client_stats(client, &s, err);
  if (rc != POLYLIMIT_OK) return rc;
#define POLYLIMIT_PACK_(name) values[POLYLIMIT_PACKED_STATS_##name] = (int64_t)s.name;
  POLYLIMIT_STATS_COUNTERS(POLYLIMIT_PACK_)
#undef POLYLIMIT_PACK_
  for (i = 0; i < POLYLIMIT_STATS_LATENCY_BUCKETS; i++) {
    uint64_t le = s.latency_le_us[i];
    values[POLYLIMIT_PACKED_STATS_LATENCY_LE_US + i] = le > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)le;
    values[POLYLIMIT_PACKED_STATS_LATENCY_BUCKETS + i] = (int64_t)s.latency_buckets[i];
  }
  return POLYLIMIT_OK;
}
%}

/* ---- non-blocking checks: completions polled in batches ----------------- */

/* Room for up to cap completions, in C memory: polylimit_queue_poll_batch
   blocks with no Java array held, and polylimit_completion_batch_unpack then
   copies the batch out in one call. A failed completion's error is read one
   at a time (sysErrno, outcomeUnknown, messageBytes; its code is the status
   unpack wrote). An index out of range reads as 0 / an empty message. */
%immutable polylimit_completion_batch::cap;
%immutable polylimit_completion_batch::n;
%ignore polylimit_completion_batch::items;
%extend polylimit_completion_batch {
  polylimit_completion_batch(int cap) {
    size_t count = cap > 0 ? (size_t)cap : 1;
    polylimit_completion_batch *b = (polylimit_completion_batch *)malloc(sizeof *b);
    if (!b) return NULL;
    b->items = (polylimit_completion *)calloc(count, sizeof *b->items);
    if (!b->items) {
      free(b);
      return NULL;
    }
    b->cap = count;
    b->n = 0;
    return b;
  }
  ~polylimit_completion_batch() {
    free($self->items);
    free($self);
  }
  int sysErrno(int i) {
    return i >= 0 && (size_t)i < $self->n ? $self->items[i].error.sys_errno : 0;
  }
  int outcomeUnknown(int i) {
    return i >= 0 && (size_t)i < $self->n ? $self->items[i].error.outcome_unknown : 0;
  }
  /* The NUL-terminated message of completion i as bytes. */
  polylimit_bytes messageBytes(int i) {
    polylimit_bytes b = { "", 0 };
    if (i >= 0 && (size_t)i < $self->n) {
      const char *m = $self->items[i].error.message;
      const char *end = (const char *)memchr(m, 0, sizeof $self->items[i].error.message);
      b.data = m;
      b.len = end ? (size_t)(end - m) : sizeof $self->items[i].error.message;
    }
    return b;
  }
}
%exception polylimit_completion_batch::polylimit_completion_batch {
  $action
  if (!result) {
    SWIG_JavaThrowException(jenv, SWIG_JavaOutOfMemoryError, "allocating the completion batch");
    return $null;
  }
}

%inline %{
typedef struct polylimit_completion_batch {
  polylimit_completion *items;
  size_t cap;
  size_t n; /* filled by the last polylimit_queue_poll_batch */
} polylimit_completion_batch;

/* polylimit_queue_poll into the batch (up to its cap, waiting up to
   timeout_ms for the first, -1: until one arrives or polylimit_queue_wake);
   returns how many it holds now. NULL arguments hold and return 0. */
int polylimit_queue_poll_batch(polylimit_queue *queue, polylimit_completion_batch *batch, int timeout_ms) {
  if (!batch) return 0;
  batch->n = queue ? polylimit_queue_poll(queue, batch->items, batch->cap, timeout_ms) : 0;
  return (int)batch->n;
}

/* Copies the batch's completions out: completion i's token to tokens[i], its
   status to codes[i] and, when that is POLYLIMIT_OK, its decision to
   values[i * POLYLIMIT_PACKED_DECISION ...] (as
   polylimit_limiter_check_many_packed packs them). Returns how many, or
   POLYLIMIT_EINVALID (nothing written) when an array is too short. */
int polylimit_completion_batch_unpack(const polylimit_completion_batch *batch, int64_t *tokens, size_t tokens_len,
                                      int64_t *values, size_t values_len, int *codes, size_t codes_len) {
  size_t i;
  if (!batch) return 0;
  if (batch->n > 0 && (!tokens || tokens_len < batch->n || !values ||
                       values_len / POLYLIMIT_PACKED_DECISION < batch->n || !codes || codes_len < batch->n))
    return POLYLIMIT_EINVALID;
  for (i = 0; i < batch->n; i++) {
    const polylimit_completion *c = &batch->items[i];
    int64_t *v = values + i * POLYLIMIT_PACKED_DECISION;
    tokens[i] = (int64_t)c->token;
    codes[i] = c->status;
    if (c->status != POLYLIMIT_OK) continue;
#define POLYLIMIT_PACK_(name) v[POLYLIMIT_PACKED_DECISION_##name] = (int64_t)c->decision.name;
    POLYLIMIT_DECISION_FIELDS(POLYLIMIT_PACK_)
#undef POLYLIMIT_PACK_
  }
  return (int)batch->n;
}
%}
/* ---- the HTTP request policy, packed ------------------------------------ */

%{
/* The request from its strings: POLYLIMIT_HTTP_FIELDS fields, then the
   values of the policy's headers in its order (NULL: absent). */
static int polylimit_swig_http_request(const void *const *fields, const size_t *lens, size_t n, int64_t cost,
                                       polylimit_http_request *r, polylimit_str *headers, polylimit_error *err);
%}

%inline %{
/* The strings of a request, in a byte[][] (null: absent): these fields, then
   the values of the headers polylimit_http_policy_header_name lists. */
enum {
  POLYLIMIT_HTTP_FIELD_METHOD,
  POLYLIMIT_HTTP_FIELD_PATH,
  POLYLIMIT_HTTP_FIELD_ROUTE,
  POLYLIMIT_HTTP_FIELD_PEER,
  POLYLIMIT_HTTP_FIELD_USER,
  POLYLIMIT_HTTP_FIELD_TENANT,
  POLYLIMIT_HTTP_FIELD_APP_KEY,
  POLYLIMIT_HTTP_FIELDS
};

/* One exchange (a step, the check's decision, the answer) as
   POLYLIMIT_PACKED_HTTP longs: read and written by the calls below. */
enum {
  POLYLIMIT_PACKED_HTTP_ACTION,
  POLYLIMIT_PACKED_HTTP_STATUS,
  POLYLIMIT_PACKED_HTTP_RULE,
  POLYLIMIT_PACKED_HTTP_COST,
  POLYLIMIT_PACKED_HTTP_CHECKED, /* 1: the decision below is the check's */
  POLYLIMIT_PACKED_HTTP_DECISION, /* POLYLIMIT_PACKED_DECISION longs */
  POLYLIMIT_PACKED_HTTP_RESPONSE_STATUS = POLYLIMIT_PACKED_HTTP_DECISION + POLYLIMIT_PACKED_DECISION,
  POLYLIMIT_PACKED_HTTP_KEY_LEN,
  POLYLIMIT_PACKED_HTTP_BODY_LEN,
  POLYLIMIT_PACKED_HTTP_HEADERS_LEN,
  POLYLIMIT_PACKED_HTTP_CHECK_FAILED, /* decide: 1 when the check failed (err says why) */
  POLYLIMIT_PACKED_HTTP
};
%}

%{
static int polylimit_swig_http_short(polylimit_error *err, const char *what) {
  if (err) {
    polylimit_error_clear(err);
    err->code = POLYLIMIT_EINVALID;
    snprintf(err->message, sizeof err->message, "%s", what);
  }
  return POLYLIMIT_EINVALID;
}

static int polylimit_swig_http_request(const void *const *fields, const size_t *lens, size_t n, int64_t cost,
                                       polylimit_http_request *r, polylimit_str *headers, polylimit_error *err) {
  size_t i;
  polylimit_str *f[POLYLIMIT_HTTP_FIELDS];
  if (!fields || n < POLYLIMIT_HTTP_FIELDS) return polylimit_swig_http_short(err, "the request has too few fields");
  memset(r, 0, sizeof *r);
  r->version = POLYLIMIT_HTTP_REQUEST_VERSION;
  f[POLYLIMIT_HTTP_FIELD_METHOD] = &r->method;
  f[POLYLIMIT_HTTP_FIELD_PATH] = &r->path;
  f[POLYLIMIT_HTTP_FIELD_ROUTE] = &r->route;
  f[POLYLIMIT_HTTP_FIELD_PEER] = &r->peer;
  f[POLYLIMIT_HTTP_FIELD_USER] = &r->user;
  f[POLYLIMIT_HTTP_FIELD_TENANT] = &r->tenant;
  f[POLYLIMIT_HTTP_FIELD_APP_KEY] = &r->app_key;
  for (i = 0; i < POLYLIMIT_HTTP_FIELDS; i++) {
    f[i]->ptr = (const char *)fields[i];
    f[i]->len = fields[i] ? lens[i] : 0;
  }
  for (i = POLYLIMIT_HTTP_FIELDS; i < n; i++) {
    headers[i - POLYLIMIT_HTTP_FIELDS].ptr = (const char *)fields[i];
    headers[i - POLYLIMIT_HTTP_FIELDS].len = fields[i] ? lens[i] : 0;
  }
  r->headers = headers;
  r->header_count = n - POLYLIMIT_HTTP_FIELDS;
  r->cost = cost;
  return POLYLIMIT_OK;
}

static void polylimit_swig_http_pack_step(const polylimit_http_step *step, int64_t *v, polylimit_http_text *text) {
  v[POLYLIMIT_PACKED_HTTP_ACTION] = step->action;
  v[POLYLIMIT_PACKED_HTTP_STATUS] = step->status;
  v[POLYLIMIT_PACKED_HTTP_RULE] = step->rule;
  v[POLYLIMIT_PACKED_HTTP_COST] = step->cost;
  v[POLYLIMIT_PACKED_HTTP_KEY_LEN] = 0;
  if (step->action == POLYLIMIT_HTTP_CHECK && step->key_len <= POLYLIMIT_HTTP_KEY_MAX) {
    v[POLYLIMIT_PACKED_HTTP_KEY_LEN] = (int64_t)step->key_len;
    if (text) {
      memcpy(text->data, step->key, step->key_len);
      text->len = step->key_len;
    }
  }
}

/* The step back from its packed values and its key. */
static int polylimit_swig_http_unpack_step(const int64_t *v, size_t values_len, const void *key, size_t key_len,
                                           polylimit_http_step *step, polylimit_error *err) {
  if (!v || values_len < POLYLIMIT_PACKED_HTTP) return polylimit_swig_http_short(err, "values is too short for a step");
  if (key_len > POLYLIMIT_HTTP_KEY_MAX) return polylimit_swig_http_short(err, "the step's key is too long");
  memset(step, 0, sizeof *step);
  step->action = (int)v[POLYLIMIT_PACKED_HTTP_ACTION];
  step->status = (int)v[POLYLIMIT_PACKED_HTTP_STATUS];
  step->rule = (int)v[POLYLIMIT_PACKED_HTTP_RULE];
  step->cost = v[POLYLIMIT_PACKED_HTTP_COST];
  step->key_len = key ? key_len : 0;
  if (key && key_len) memcpy(step->key, key, key_len);
  return POLYLIMIT_OK;
}

static void polylimit_swig_http_unpack_decision(const int64_t *v, polylimit_decision *d) {
  const int64_t *p = v + POLYLIMIT_PACKED_HTTP_DECISION;
  memset(d, 0, sizeof *d);
#define POLYLIMIT_UNPACK_(name) d->name = p[POLYLIMIT_PACKED_DECISION_##name];
  POLYLIMIT_DECISION_FIELDS(POLYLIMIT_UNPACK_)
#undef POLYLIMIT_UNPACK_
}

static void polylimit_swig_http_pack_decision(const polylimit_decision *d, int64_t *v) {
  int64_t *p = v + POLYLIMIT_PACKED_HTTP_DECISION;
#define POLYLIMIT_PACK_(name) p[POLYLIMIT_PACKED_DECISION_##name] = (int64_t)d->name;
  POLYLIMIT_DECISION_FIELDS(POLYLIMIT_PACK_)
#undef POLYLIMIT_PACK_
}

/* The response after the key already in text: body, then headers. */
static void polylimit_swig_http_pack_response(const polylimit_http_response *r, int64_t *v, polylimit_http_text *text) {
  size_t at = text ? text->len : 0;
  size_t room = sizeof text->data - at;
  size_t body = r->body_len < room ? r->body_len : room;
  size_t headers;
  room -= body;
  headers = r->headers_len < room ? r->headers_len : room;
  v[POLYLIMIT_PACKED_HTTP_RESPONSE_STATUS] = r->status;
  v[POLYLIMIT_PACKED_HTTP_BODY_LEN] = (int64_t)body;
  v[POLYLIMIT_PACKED_HTTP_HEADERS_LEN] = (int64_t)headers;
  if (text) {
    memcpy(text->data + at, r->body, body);
    memcpy(text->data + at + body, r->headers, headers);
    text->len = at + body + headers;
  }
}
%}

%inline %{
/* polylimit_http_policy_new with the document as bytes. */
int polylimit_http_policy_new_packed(const void *bytes, size_t len, polylimit_limiter *const *limiters,
                                     size_t n_limiters, polylimit_http_policy **out, polylimit_error *err) {
  return polylimit_http_policy_new(bytes ? (const char *)bytes : "", bytes ? len : 0, limiters, n_limiters, out, err);
}

/* polylimit_http_prepare: the request's strings in keys (POLYLIMIT_HTTP_FIELD_*,
   then the header values), the step into values and its key into text. */
int polylimit_http_prepare_packed(const polylimit_http_policy *policy, const void *const *keys,
                                  const size_t *key_lens, size_t n, int64_t cost, int64_t *values, size_t values_len,
                                  polylimit_http_text *text, polylimit_error *err) {
  polylimit_http_request r;
  polylimit_str *headers;
  polylimit_http_step *step;
  int rc;
  if (!values || values_len < POLYLIMIT_PACKED_HTTP) return polylimit_swig_http_short(err, "values is too short");
  headers = (polylimit_str *)calloc(n + 1, sizeof *headers);
  step = (polylimit_http_step *)malloc(sizeof *step);
  if (!headers || !step) {
    free(headers);
    free(step);
    return polylimit_swig_http_short(err, "out of memory for the request");
  }
  rc = polylimit_swig_http_request(keys, key_lens, n, cost, &r, headers, err);
  if (rc == POLYLIMIT_OK) rc = polylimit_http_prepare(policy, &r, step, err);
  if (rc == POLYLIMIT_OK) polylimit_swig_http_pack_step(step, values, text);
  free(headers);
  free(step);
  return rc;
}

/* polylimit_http_answer for the step in values and key, with the decision in
   values when POLYLIMIT_PACKED_HTTP_CHECKED is 1 (else: the check failed);
   the response into values, its body and headers into text. */
int polylimit_http_answer_packed(const polylimit_http_policy *policy, const void *key, size_t key_len,
                                 int64_t *values, size_t values_len, polylimit_http_text *text, polylimit_error *err) {
  polylimit_http_step step;
  polylimit_http_response response;
  polylimit_decision d;
  int rc = polylimit_swig_http_unpack_step(values, values_len, key, key_len, &step, err);
  if (rc != POLYLIMIT_OK) return rc;
  if (values[POLYLIMIT_PACKED_HTTP_CHECKED]) polylimit_swig_http_unpack_decision(values, &d);
  rc = polylimit_http_answer(policy, &step, values[POLYLIMIT_PACKED_HTTP_CHECKED] ? &d : NULL, &response, err);
  if (rc != POLYLIMIT_OK) return rc;
  values[POLYLIMIT_PACKED_HTTP_KEY_LEN] = 0;
  polylimit_swig_http_pack_response(&response, values, text);
  return POLYLIMIT_OK;
}

/* polylimit_http_decide: prepare, the check on the rule's limiter (blocking)
   and answer, in one call. A failed check is an answer (503, or on with
   on_error "allow"): the call returns POLYLIMIT_OK with
   POLYLIMIT_PACKED_HTTP_CHECK_FAILED set and the check's error in err. */
int polylimit_http_decide_packed(const polylimit_http_policy *policy, const void *const *keys,
                                 const size_t *key_lens, size_t n, int64_t cost, int64_t *values, size_t values_len,
                                 polylimit_http_text *text, polylimit_error *err) {
  polylimit_http_request r;
  polylimit_str *headers;
  polylimit_http_step *step;
  polylimit_http_response *response;
  polylimit_decision d;
  polylimit_error local;
  int rc, failed;
  if (!values || values_len < POLYLIMIT_PACKED_HTTP) return polylimit_swig_http_short(err, "values is too short");
  if (!err) err = &local;
  polylimit_error_clear(err);
  values[POLYLIMIT_PACKED_HTTP_CHECKED] = 0;
  values[POLYLIMIT_PACKED_HTTP_CHECK_FAILED] = 0;
  values[POLYLIMIT_PACKED_HTTP_RESPONSE_STATUS] = 0;
  values[POLYLIMIT_PACKED_HTTP_BODY_LEN] = 0;
  values[POLYLIMIT_PACKED_HTTP_HEADERS_LEN] = 0;
  headers = (polylimit_str *)calloc(n + 1, sizeof *headers);
  step = (polylimit_http_step *)malloc(sizeof *step);
  response = (polylimit_http_response *)malloc(sizeof *response);
  if (!headers || !step || !response) {
    free(headers);
    free(step);
    free(response);
    return polylimit_swig_http_short(err, "out of memory for the request");
  }
  rc = polylimit_swig_http_request(keys, key_lens, n, cost, &r, headers, err);
  if (rc == POLYLIMIT_OK) rc = polylimit_http_decide(policy, &r, step, &d, response, err);
  if (rc == POLYLIMIT_OK) {
    failed = err->code != 0;
    polylimit_swig_http_pack_step(step, values, text);
    if (step->action == POLYLIMIT_HTTP_CHECK || step->action == POLYLIMIT_HTTP_RESPOND)
      polylimit_swig_http_pack_response(response, values, text);
    values[POLYLIMIT_PACKED_HTTP_CHECKED] = step->action == POLYLIMIT_HTTP_CHECK && !failed;
    values[POLYLIMIT_PACKED_HTTP_CHECK_FAILED] = failed;
    if (values[POLYLIMIT_PACKED_HTTP_CHECKED]) polylimit_swig_http_pack_decision(&d, values);
  }
  free(headers);
  free(step);
  free(response);
  return rc;
}

/* polylimit_http_refund_due for the step in values and key, and the decision in values. */
int polylimit_http_refund_due_packed(const polylimit_http_policy *policy, const void *key, size_t key_len,
                                     int64_t *values, size_t values_len, int status) {
  polylimit_http_step step;
  polylimit_decision d;
  if (polylimit_swig_http_unpack_step(values, values_len, key, key_len, &step, NULL) != POLYLIMIT_OK) return 0;
  polylimit_swig_http_unpack_decision(values, &d);
  return polylimit_http_refund_due(policy, &step, &d, status);
}

/* polylimit_http_refund_due and, when due, the refund on the rule's limiter
   (limiters as for decide; blocking): 1 when it refunded, 0 when none was
   due, or the failed refund's status. */
int polylimit_http_settle_packed(const polylimit_http_policy *policy, polylimit_limiter *const *limiters,
                                 size_t n_limiters, const void *key, size_t key_len, int64_t *values,
                                 size_t values_len, int status, polylimit_error *err) {
  polylimit_http_step step;
  polylimit_decision d;
  int index, rc;
  if (err) polylimit_error_clear(err);
  rc = polylimit_swig_http_unpack_step(values, values_len, key, key_len, &step, err);
  if (rc != POLYLIMIT_OK) return rc;
  polylimit_swig_http_unpack_decision(values, &d);
  if (!polylimit_http_refund_due(policy, &step, &d, status)) return 0;
  index = polylimit_http_policy_rule_limiter(policy, (size_t)step.rule);
  if (index < 0 || (size_t)index >= n_limiters || !limiters)
    return polylimit_swig_http_short(err, "the rule's limiter is not among the limiters given");
  rc = polylimit_limiter_refund(limiters[index], step.key, step.key_len, step.cost, &d, err);
  return rc == POLYLIMIT_OK ? 1 : rc;
}
%}
#endif /* SWIGJAVA */

/* ==== live policy (Java), packed calls: begin ============================
   A step of a loaded or live policy names its limiter (step.limiter) and a
   request may carry its tenant's plan: these calls use a values array one
   longer than POLYLIMIT_PACKED_HTTP, with the limiter at
   POLYLIMIT_PACKED_HTTP_LIMITER (written by prepare, read by answer and
   refund_due); the check and the refund are the binding's own, on the
   handle polylimit_http_policy_limiter gives. */
#ifdef SWIGJAVA
%inline %{
enum {
  POLYLIMIT_PACKED_HTTP_LIMITER = POLYLIMIT_PACKED_HTTP,
  POLYLIMIT_PACKED_HTTP_LIVE
};

/* polylimit_http_policy_load with the document as bytes. */
int polylimit_http_policy_load_packed(polylimit_client *client, const void *bytes, size_t len,
                                      polylimit_limiter *const *limiters, size_t n_limiters,
                                      polylimit_http_policy **out, polylimit_error *err) {
  return polylimit_http_policy_load(client, bytes ? (const char *)bytes : "", bytes ? len : 0, limiters, n_limiters,
                                    out, err);
}

/* polylimit_http_live_new with the document as bytes. */
int polylimit_http_live_new_packed(polylimit_client *client, const void *bytes, size_t len,
                                   polylimit_limiter *const *limiters, size_t n_limiters, polylimit_http_live **out,
                                   polylimit_error *err) {
  return polylimit_http_live_new(client, bytes ? (const char *)bytes : "", bytes ? len : 0, limiters, n_limiters, out,
                                 err);
}

/* polylimit_http_live_open with the path as bytes (no NUL inside). */
int polylimit_http_live_open_packed(polylimit_client *client, const void *bytes, size_t len,
                                    polylimit_limiter *const *limiters, size_t n_limiters, int watch_ms,
                                    polylimit_http_live **out, polylimit_error *err) {
  char *path;
  int rc;
  if (!bytes || memchr(bytes, 0, len)) return polylimit_swig_http_short(err, "the path is empty or has a NUL");
  path = (char *)malloc(len + 1);
  if (!path) return polylimit_swig_http_short(err, "out of memory for the path");
  memcpy(path, bytes, len);
  path[len] = '\0';
  rc = polylimit_http_live_open(client, path, limiters, n_limiters, watch_ms, out, err);
  free(path);
  return rc;
}

/* polylimit_http_live_reload with the document as bytes. */
int polylimit_http_live_reload_packed(polylimit_http_live *live, const void *bytes, size_t len, polylimit_error *err) {
  return polylimit_http_live_reload(live, bytes ? (const char *)bytes : "", bytes ? len : 0, err);
}

/* polylimit_http_live_cached_plan: 1 and the plan in text (left alone when
   it is ""), or 0. */
int polylimit_http_live_cached_plan_packed(const polylimit_http_live *live, const void *key, size_t key_len,
                                           polylimit_http_text *text) {
  char plan[POLYLIMIT_HTTP_KEY_MAX + 1];
  if (!polylimit_http_live_cached_plan(live, key ? (const char *)key : "", key ? key_len : 0, plan, sizeof plan))
    return 0;
  if (text) {
    text->len = strlen(plan);
    memcpy(text->data, plan, text->len);
  }
  return 1;
}

/* polylimit_http_live_cache_plan: the tenant in key, the plan in bytes. */
int polylimit_http_live_cache_plan_packed(polylimit_http_live *live, const void *key, size_t key_len,
                                          const void *bytes, size_t len, polylimit_error *err) {
  return polylimit_http_live_cache_plan(live, key ? (const char *)key : "", key ? key_len : 0,
                                        bytes ? (const char *)bytes : "", bytes ? len : 0, err);
}

/* polylimit_http_prepare_packed with the tenant's plan (bytes; null: not
   resolved, empty: the default plan) and the step's limiter written to
   values[POLYLIMIT_PACKED_HTTP_LIMITER]. */
int polylimit_http_prepare_plan_packed(const polylimit_http_policy *policy, const void *const *keys,
                                       const size_t *key_lens, size_t n, int64_t cost, const void *bytes, size_t len,
                                       int64_t *values, size_t values_len, polylimit_http_text *text,
                                       polylimit_error *err) {
  polylimit_http_request r;
  polylimit_str *headers;
  polylimit_http_step *step;
  int rc;
  if (!values || values_len < POLYLIMIT_PACKED_HTTP_LIVE) return polylimit_swig_http_short(err, "values is too short");
  headers = (polylimit_str *)calloc(n + 1, sizeof *headers);
  step = (polylimit_http_step *)malloc(sizeof *step);
  if (!headers || !step) {
    free(headers);
    free(step);
    return polylimit_swig_http_short(err, "out of memory for the request");
  }
  rc = polylimit_swig_http_request(keys, key_lens, n, cost, &r, headers, err);
  if (rc == POLYLIMIT_OK) {
    r.plan.ptr = bytes ? (const char *)bytes : NULL;
    r.plan.len = bytes ? len : 0;
    rc = polylimit_http_prepare(policy, &r, step, err);
  }
  if (rc == POLYLIMIT_OK) {
    polylimit_swig_http_pack_step(step, values, text);
    values[POLYLIMIT_PACKED_HTTP_LIMITER] = step->limiter;
  }
  free(headers);
  free(step);
  return rc;
}

/* polylimit_http_answer_packed for a step with its limiter. */
int polylimit_http_answer_live_packed(const polylimit_http_policy *policy, const void *key, size_t key_len,
                                      int64_t *values, size_t values_len, polylimit_http_text *text,
                                      polylimit_error *err) {
  polylimit_http_step step;
  polylimit_http_response response;
  polylimit_decision d;
  int rc;
  if (!values || values_len < POLYLIMIT_PACKED_HTTP_LIVE) return polylimit_swig_http_short(err, "values is too short");
  rc = polylimit_swig_http_unpack_step(values, values_len, key, key_len, &step, err);
  if (rc != POLYLIMIT_OK) return rc;
  step.limiter = (int)values[POLYLIMIT_PACKED_HTTP_LIMITER];
  if (values[POLYLIMIT_PACKED_HTTP_CHECKED]) polylimit_swig_http_unpack_decision(values, &d);
  rc = polylimit_http_answer(policy, &step, values[POLYLIMIT_PACKED_HTTP_CHECKED] ? &d : NULL, &response, err);
  if (rc != POLYLIMIT_OK) return rc;
  values[POLYLIMIT_PACKED_HTTP_KEY_LEN] = 0;
  polylimit_swig_http_pack_response(&response, values, text);
  return POLYLIMIT_OK;
}

/* polylimit_http_refund_due_packed for a step with its limiter. */
int polylimit_http_refund_due_live_packed(const polylimit_http_policy *policy, const void *key, size_t key_len,
                                          int64_t *values, size_t values_len, int status) {
  polylimit_http_step step;
  polylimit_decision d;
  if (!values || values_len < POLYLIMIT_PACKED_HTTP_LIVE) return 0;
  if (polylimit_swig_http_unpack_step(values, values_len, key, key_len, &step, NULL) != POLYLIMIT_OK) return 0;
  step.limiter = (int)values[POLYLIMIT_PACKED_HTTP_LIMITER];
  polylimit_swig_http_unpack_decision(values, &d);
  return polylimit_http_refund_due(policy, &step, &d, status);
}
%}
#endif /* SWIGJAVA */
/* ==== live policy (Java), packed calls: end ============================== */
