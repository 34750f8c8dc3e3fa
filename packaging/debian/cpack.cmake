# Debian packages, built with `cpack -G DEB` in a build directory (see
# tests/c/deb_package.sh). Two packages, as Debian splits a C library:
#   libpolylimit1     the shared library libpolylimit.so.1 (component "runtime")
#                     and /usr/share/doc/libpolylimit1/{copyright,LICENSE,THIRD_PARTY_NOTICES}
#   libpolylimit-dev  polylimit.h, the libpolylimit.so link, libpolylimit.a,
#                     polylimit.pc, the CMake package and /usr/share/doc/polylimit
#                     (component "development")
# Configure with -DCMAKE_INSTALL_PREFIX=/usr so that the library lands in the
# multiarch directory (/usr/lib/<triplet>) that GNUInstallDirs picks for /usr.
if(NOT CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  message(STATUS "Debian packages (cpack -G DEB) want -DCMAKE_INSTALL_PREFIX=/usr (multiarch libdir); "
    "this build would package /usr/${CMAKE_INSTALL_LIBDIR}")
endif()

set(POLYLIMIT_DEB_RUNTIME "libpolylimit${PROJECT_VERSION_MAJOR}")
set(POLYLIMIT_DEB_DEV "libpolylimit-dev")

# Debian policy 12.5: every package has /usr/share/doc/<package>/copyright.
# These rules only run for a component install (cpack), not for a plain
# `cmake --install`, which puts LICENSE and the notices in share/doc/polylimit.
set(POLYLIMIT_DEB_COPYRIGHT "${PROJECT_BINARY_DIR}/packaging/debian/copyright")
file(READ "${PROJECT_SOURCE_DIR}/LICENSE" _polylimit_license)
file(READ "${PROJECT_SOURCE_DIR}/THIRD_PARTY_NOTICES" _polylimit_notices)
file(WRITE "${POLYLIMIT_DEB_COPYRIGHT}.tmp"
  "polylimit ${PROJECT_VERSION}: ${PROJECT_DESCRIPTION}\n\n"
  "polylimit is under the MIT License:\n\n${_polylimit_license}\n\n${_polylimit_notices}")
configure_file("${POLYLIMIT_DEB_COPYRIGHT}.tmp" "${POLYLIMIT_DEB_COPYRIGHT}" COPYONLY)  # rewritten only on change
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
  "${PROJECT_SOURCE_DIR}/LICENSE" "${PROJECT_SOURCE_DIR}/THIRD_PARTY_NOTICES")
install(FILES "${POLYLIMIT_DEB_COPYRIGHT}" LICENSE THIRD_PARTY_NOTICES
  DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/${POLYLIMIT_DEB_RUNTIME} COMPONENT runtime EXCLUDE_FROM_ALL)
install(FILES "${POLYLIMIT_DEB_COPYRIGHT}"
  DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/${POLYLIMIT_DEB_DEV} COMPONENT development EXCLUDE_FROM_ALL)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME polylimit)
set(CPACK_PACKAGE_VENDOR "The polylimit authors")
set(CPACK_PACKAGE_CONTACT "The polylimit authors")
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
set(CPACK_COMPONENTS_ALL runtime development)   # not the CLI, the Python module or the JNI library
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)          # <name>_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME "${POLYLIMIT_DEB_RUNTIME}")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION libs)
set(CPACK_COMPONENT_RUNTIME_DESCRIPTION
  "distributed rate limiter on Redis (shared library)
polylimit decides rate limits shared by many application servers through
Redis: every decision is one atomic Lua script, so concurrent requests can
never over-admit. This package holds the shared library with its stable C ABI
(hiredis is linked in; TLS through the system's OpenSSL).")
# Depends: from dpkg-shlibdeps (libc6, libstdc++6, libgcc-s1, libssl3). shlibs and the
# ldconfig trigger let other packages depend on libpolylimit1 the same way.
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")   # the ABI only grows within a SONAME

set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_NAME "${POLYLIMIT_DEB_DEV}")
set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_SECTION libdevel)
set(CPACK_COMPONENT_DEVELOPMENT_DESCRIPTION
  "distributed rate limiter on Redis (development files)
polylimit decides rate limits shared by many application servers through
Redis. This package holds the C header, the static library, the pkg-config
file and the CMake package (polylimit::polylimit, polylimit::polylimit_static).")
set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_SHLIBDEPS OFF)
# libpolylimit.a needs hiredis, OpenSSL (polylimit.pc: Requires.private:
# libssl libcrypto) and, linked by a C compiler, the C++ runtime's
# development link (libstdc++.so), which Debian ships in libstdc++-N-dev.
set(_polylimit_dev_depends "${POLYLIMIT_DEB_RUNTIME} (= ${PROJECT_VERSION}), libhiredis-dev, libssl-dev")
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  string(REGEX MATCH "^[0-9]+" _polylimit_gcc_major "${CMAKE_CXX_COMPILER_VERSION}")
  string(APPEND _polylimit_dev_depends ", libstdc++-${_polylimit_gcc_major}-dev | libstdc++-dev")
endif()
set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_DEPENDS "${_polylimit_dev_depends}")

include(CPack)
