# SPDX-License-Identifier: MIT
# Mbed TLS's libmbedcrypto, 2.28 or 3.x (2.28 ships no pkg-config file on
# Debian). Found in the standard places, or under a prefix given with
# -DCMAKE_PREFIX_PATH=DIR: DIR/include and DIR/lib, or DIR/library as a
# source tree built in place leaves it. Or set the cache variables
# MBEDTLS_INCLUDE_DIR (the directory holding mbedtls/) and MBEDCRYPTO_LIBRARY
# (the library file) yourself. Sets MbedTLS_VERSION from the headers and the
# imported target MbedTLS::MbedCrypto.
set(_ss_mbedtls_hints "")
foreach(prefix IN LISTS CMAKE_PREFIX_PATH)
  list(APPEND _ss_mbedtls_hints "${prefix}/library")
endforeach()
find_path(MBEDTLS_INCLUDE_DIR mbedtls/gcm.h
  DOC "the directory that holds Mbed TLS's mbedtls/ headers")
find_library(MBEDCRYPTO_LIBRARY NAMES mbedcrypto HINTS ${_ss_mbedtls_hints}
  DOC "Mbed TLS's libmbedcrypto (.so or .a)")
unset(_ss_mbedtls_hints)

# 2.x defines the version in version.h, 3.x in build_info.h.
set(MbedTLS_VERSION "")
foreach(header build_info.h version.h)
  set(file "${MBEDTLS_INCLUDE_DIR}/mbedtls/${header}")
  if(MBEDTLS_INCLUDE_DIR AND EXISTS "${file}" AND NOT MbedTLS_VERSION)
    file(STRINGS "${file}" line REGEX "^#define[ \t]+MBEDTLS_VERSION_STRING[ \t]+\"")
    string(REGEX REPLACE ".*\"([0-9.]+)\".*" "\\1" MbedTLS_VERSION "${line}")
  endif()
endforeach()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(MbedTLS
  REQUIRED_VARS MBEDCRYPTO_LIBRARY MBEDTLS_INCLUDE_DIR
  VERSION_VAR MbedTLS_VERSION)
if(MbedTLS_FOUND AND NOT TARGET MbedTLS::MbedCrypto)
  add_library(MbedTLS::MbedCrypto UNKNOWN IMPORTED)
  set_target_properties(MbedTLS::MbedCrypto PROPERTIES
    IMPORTED_LOCATION "${MBEDCRYPTO_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${MBEDTLS_INCLUDE_DIR}")
endif()
mark_as_advanced(MBEDTLS_INCLUDE_DIR MBEDCRYPTO_LIBRARY)
