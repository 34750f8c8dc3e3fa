# Debian packages, built with `cpack -G DEB` in a build directory (see
# tests/c/deb_package.sh, which also runs lintian on them). Three packages, as
# Debian splits a C library and its tools:
#   libpolylimit1     the shared library libpolylimit.so.1 (component "runtime"),
#                     an ldconfig trigger and shlibs
#   libpolylimit-dev  polylimit.h, the libpolylimit.so link, libpolylimit.a,
#                     polylimit.pc, the CMake package and /usr/share/doc/polylimit
#                     with docs/ and docs/integrations/ (component "development")
#   polylimit-tools   /usr/bin/polylimit and its man page (component "tools")
# Each has /usr/share/doc/<package>/{copyright,changelog.gz}.
# Configure with -DCMAKE_INSTALL_PREFIX=/usr so that the library lands in the
# multiarch directory (/usr/lib/<triplet>) that GNUInstallDirs picks for /usr.
if(NOT CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  message(STATUS "Debian packages (cpack -G DEB) want -DCMAKE_INSTALL_PREFIX=/usr (multiarch libdir); "
    "this build would package /usr/${CMAKE_INSTALL_LIBDIR}")
endif()

set(POLYLIMIT_DEB_RUNTIME "libpolylimit${PROJECT_VERSION_MAJOR}")
set(POLYLIMIT_DEB_DEV "libpolylimit-dev")
set(POLYLIMIT_DEB_TOOLS "polylimit-tools")

# Debian policy 12.5 and 12.7: every package has /usr/share/doc/<package>/
# copyright (machine-readable, packaging/debian/copyright: MIT, OpenSSL's
# Apache-2.0 by reference to common-licenses) and its
# changelog (native version: changelog.gz, compressed with gzip -9n so the
# package is reproducible). These rules only run for a component install
# (cpack), not for a plain `cmake --install`.
set(POLYLIMIT_DEB_COPYRIGHT "${PROJECT_SOURCE_DIR}/packaging/debian/copyright")
set(POLYLIMIT_DEB_CHANGELOG "${PROJECT_BINARY_DIR}/packaging/debian/changelog.gz")
file(MAKE_DIRECTORY "${PROJECT_BINARY_DIR}/packaging/debian")
execute_process(COMMAND gzip -9nc "${PROJECT_SOURCE_DIR}/packaging/debian/changelog"
  OUTPUT_FILE "${POLYLIMIT_DEB_CHANGELOG}" RESULT_VARIABLE _polylimit_gzip)
if(NOT _polylimit_gzip EQUAL 0)
  message(FATAL_ERROR "gzip of packaging/debian/changelog failed (${_polylimit_gzip})")
endif()
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/packaging/debian/changelog")
foreach(_polylimit_pkg_component
    "${POLYLIMIT_DEB_RUNTIME}:runtime" "${POLYLIMIT_DEB_DEV}:development" "${POLYLIMIT_DEB_TOOLS}:tools")
  string(REPLACE ":" ";" _polylimit_pc "${_polylimit_pkg_component}")
  list(GET _polylimit_pc 0 _polylimit_pkg)
  list(GET _polylimit_pc 1 _polylimit_component)
  install(FILES "${POLYLIMIT_DEB_COPYRIGHT}" "${POLYLIMIT_DEB_CHANGELOG}"
    DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/${_polylimit_pkg} COMPONENT ${_polylimit_component} EXCLUDE_FROM_ALL)
endforeach()
install(FILES THIRD_PARTY_NOTICES
  DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/${POLYLIMIT_DEB_RUNTIME} COMPONENT runtime EXCLUDE_FROM_ALL)
install(FILES "${PROJECT_SOURCE_DIR}/packaging/debian/${POLYLIMIT_DEB_RUNTIME}.lintian-overrides"
  DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/lintian/overrides RENAME ${POLYLIMIT_DEB_RUNTIME}
  COMPONENT runtime EXCLUDE_FROM_ALL)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME polylimit)
set(CPACK_PACKAGE_VENDOR "The polylimit authors")
set(CPACK_PACKAGE_CONTACT "The polylimit authors <polylimit@users.noreply.github.com>")
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${CPACK_PACKAGE_CONTACT}")
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "https://github.com/polylimit/polylimit")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
# Each component description below starts with its own summary line. CPackDeb
# prepends CPACK_PACKAGE_DESCRIPTION_SUMMARY to it unless that is CPack's
# default text, so it is set to exactly that default.
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${CMAKE_PROJECT_NAME} built using CMake")
set(CPACK_RESOURCE_FILE_LICENSE "${PROJECT_SOURCE_DIR}/LICENSE")
set(CPACK_PACKAGING_INSTALL_PREFIX "/usr")
set(CPACK_PACKAGE_DIRECTORY "${PROJECT_BINARY_DIR}/packages")
set(CPACK_STRIP_FILES ON)

set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL runtime development tools)   # not the Python module or the JNI library
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)          # <name>_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME "${POLYLIMIT_DEB_RUNTIME}")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION libs)
set(CPACK_COMPONENT_RUNTIME_DESCRIPTION
  "distributed rate limiter on Redis (shared library)
polylimit decides rate limits shared by many application servers through
Redis: every decision is one atomic Lua script, so concurrent requests can
never over-admit. This package holds the shared library with its stable C ABI
(TLS through the system's OpenSSL).")
# Depends: from dpkg-shlibdeps (libc6, libstdc++6, libgcc-s1, libssl3). shlibs and the
# ldconfig trigger let other packages depend on libpolylimit1 the same way.
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")   # the ABI only grows within a SONAME
# Policy 8.1.1: a package with a shared library runs ldconfig through a
# dpkg trigger (CPack writes no trigger of its own for shlibs).
# CPack adds a postinst/postrm calling ldconfig as well (no switch turns
# them off; empty replacements are a lintian warning of their own), so the
# package carries a lintian override that says so.
set(CPACK_DEBIAN_RUNTIME_PACKAGE_CONTROL_EXTRA "${PROJECT_SOURCE_DIR}/packaging/debian/triggers")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_CONTROL_STRICT_PERMISSION ON)

set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_NAME "${POLYLIMIT_DEB_DEV}")
set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_SECTION libdevel)
set(CPACK_COMPONENT_DEVELOPMENT_DESCRIPTION
  "distributed rate limiter on Redis (development files)
polylimit decides rate limits shared by many application servers through
Redis. This package holds the C header, the static library, the pkg-config
file and the CMake package (polylimit::polylimit, polylimit::polylimit_static).")
set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_SHLIBDEPS OFF)
# libpolylimit.a needs OpenSSL (polylimit.pc: Requires.private: libssl
# libcrypto) and, linked by a C compiler, the C++ runtime's development link
# (libstdc++.so), which Debian ships in libstdc++-N-dev.
set(_polylimit_dev_depends "${POLYLIMIT_DEB_RUNTIME} (= ${PROJECT_VERSION}), libssl-dev")
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  string(REGEX MATCH "^[0-9]+" _polylimit_gcc_major "${CMAKE_CXX_COMPILER_VERSION}")
  string(APPEND _polylimit_dev_depends ", libstdc++-${_polylimit_gcc_major}-dev | libstdc++-dev")
endif()
set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_DEPENDS "${_polylimit_dev_depends}")

set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME "${POLYLIMIT_DEB_TOOLS}")
set(CPACK_DEBIAN_TOOLS_PACKAGE_SECTION net)
set(CPACK_COMPONENT_TOOLS_DESCRIPTION
  "distributed rate limiter on Redis (command-line tool)
polylimit decides rate limits shared by many application servers through
Redis. This package holds the polylimit command: check, peek, reset and
inspect a key's limit from a shell, and benchmark a server.")
# dpkg-shlibdeps cannot resolve libpolylimit.so.1 while it is only being
# packaged, so the library is named here; the rest of what the tool loads
# is what the library itself depends on.
set(CPACK_DEBIAN_TOOLS_PACKAGE_SHLIBDEPS OFF)
set(CPACK_DEBIAN_TOOLS_PACKAGE_DEPENDS
  "${POLYLIMIT_DEB_RUNTIME} (= ${PROJECT_VERSION}), libc6 (>= 2.34), libstdc++6 (>= 11), libgcc-s1 (>= 3.0)")

include(CPack)
