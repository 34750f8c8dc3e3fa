# hiredis, for tests and benchmarks only: the reference RESP parser that the
# core's own reply reader is checked against (tests/cpp/reply_reader_test.cpp,
# tests/fuzz/fuzz_reply.cpp) and the raw client of the benchmarks' baselines
# (bench/). The library never includes or links it. Defines the imported
# target polylimit_test_hiredis when hiredis is found (Debian: libhiredis-dev).
if(NOT TARGET polylimit_test_hiredis)
  find_path(POLYLIMIT_TEST_HIREDIS_INCLUDE_DIR hiredis/hiredis.h DOC "hiredis's headers (tests only)")
  find_library(POLYLIMIT_TEST_HIREDIS_LIBRARY NAMES hiredis DOC "hiredis (tests only)")
  if(POLYLIMIT_TEST_HIREDIS_INCLUDE_DIR AND POLYLIMIT_TEST_HIREDIS_LIBRARY)
    add_library(polylimit_test_hiredis UNKNOWN IMPORTED GLOBAL)
    set_target_properties(polylimit_test_hiredis PROPERTIES
      IMPORTED_LOCATION "${POLYLIMIT_TEST_HIREDIS_LIBRARY}"
      INTERFACE_INCLUDE_DIRECTORIES "${POLYLIMIT_TEST_HIREDIS_INCLUDE_DIR}")
  endif()
endif()
