# SPDX-License-Identifier: MIT
# Mbed TLS's libmbedcrypto, and libmbedx509 and libmbedtls beside it (the
# online configuration's HTTPS), 2.28 or 3.x (2.28 ships no pkg-config file on
# Debian). Found in the standard places, or under a prefix given with
# -DCMAKE_PREFIX_PATH=DIR: DIR/include and DIR/lib, or DIR/library as a
# source tree built in place leaves it. Or set the cache variables
# MBEDTLS_INCLUDE_DIR (the directory holding mbedtls/), MBEDCRYPTO_LIBRARY,
# MBEDX509_LIBRARY and MBEDTLS_LIBRARY (the library files) yourself. Sets
# MbedTLS_VERSION from the headers and the imported targets
# MbedTLS::MbedCrypto, MbedTLS::MbedX509 and MbedTLS::MbedTLS (each bringing
# the ones it needs).
set(_ss_mbedtls_hints "")
foreach(prefix IN LISTS CMAKE_PREFIX_PATH)
  list(APPEND _ss_mbedtls_hints "${prefix}/library")
endforeach()
find_path(MBEDTLS_INCLUDE_DIR mbedtls/gcm.h
  DOC "the directory that holds Mbed TLS's mbedtls/ headers")
find_library(MBEDCRYPTO_LIBRARY NAMES mbedcrypto HINTS ${_ss_mbedtls_hints}
  DOC "Mbed TLS's libmbedcrypto (.so or .a)")
find_library(MBEDX509_LIBRARY NAMES mbedx509 HINTS ${_ss_mbedtls_hints}
  DOC "Mbed TLS's libmbedx509 (.so or .a)")
find_library(MBEDTLS_LIBRARY NAMES mbedtls HINTS ${_ss_mbedtls_hints}
  DOC "Mbed TLS's libmbedtls (.so or .a)")
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
  REQUIRED_VARS MBEDCRYPTO_LIBRARY MBEDX509_LIBRARY MBEDTLS_LIBRARY MBEDTLS_INCLUDE_DIR
  VERSION_VAR MbedTLS_VERSION)
if(MbedTLS_FOUND AND NOT TARGET MbedTLS::MbedCrypto)
  add_library(MbedTLS::MbedCrypto UNKNOWN IMPORTED)
  set_target_properties(MbedTLS::MbedCrypto PROPERTIES
    IMPORTED_LOCATION "${MBEDCRYPTO_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${MBEDTLS_INCLUDE_DIR}")
  add_library(MbedTLS::MbedX509 UNKNOWN IMPORTED)
  set_target_properties(MbedTLS::MbedX509 PROPERTIES
    IMPORTED_LOCATION "${MBEDX509_LIBRARY}"
    INTERFACE_LINK_LIBRARIES MbedTLS::MbedCrypto)
  add_library(MbedTLS::MbedTLS UNKNOWN IMPORTED)
  set_target_properties(MbedTLS::MbedTLS PROPERTIES
    IMPORTED_LOCATION "${MBEDTLS_LIBRARY}"
    INTERFACE_LINK_LIBRARIES MbedTLS::MbedX509)
endif()
mark_as_advanced(MBEDTLS_INCLUDE_DIR MBEDCRYPTO_LIBRARY MBEDX509_LIBRARY MBEDTLS_LIBRARY)
