# mbedtls 2.28 ships no pkg-config file on Debian.
find_path(MBEDTLS_INCLUDE_DIR mbedtls/gcm.h)
find_library(MBEDCRYPTO_LIBRARY NAMES mbedcrypto)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(MbedTLS DEFAULT_MSG MBEDCRYPTO_LIBRARY MBEDTLS_INCLUDE_DIR)
if(MbedTLS_FOUND AND NOT TARGET MbedTLS::MbedCrypto)
  add_library(MbedTLS::MbedCrypto UNKNOWN IMPORTED)
  set_target_properties(MbedTLS::MbedCrypto PROPERTIES
    IMPORTED_LOCATION "${MBEDCRYPTO_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${MBEDTLS_INCLUDE_DIR}")
endif()
mark_as_advanced(MBEDTLS_INCLUDE_DIR MBEDCRYPTO_LIBRARY)
