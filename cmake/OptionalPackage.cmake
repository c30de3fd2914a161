# SPDX-License-Identifier: MIT
# ss_optional_package(OPTION PREFIX MODULE WHAT DEBIAN_PACKAGE)
#
# An optional library found with pkg-config, chosen by the cache variable
# OPTION: AUTO (the default) takes it when it is found, ON (or another true
# constant) makes its absence a configure error, OFF (or another false
# constant) never takes it, even when it is installed. Sets
# PREFIX_TAKEN (true or false) and, when taken, PREFIX_VERSION and the
# imported target PkgConfig::PREFIX. pkg-config's own results are cached,
# so only PREFIX_TAKEN says whether this configuration uses the library.
function(ss_optional_package option prefix module what debian_package)
  set(${option} AUTO CACHE STRING "${what}: AUTO (when found), ON (required) or OFF")
  set_property(CACHE ${option} PROPERTY STRINGS AUTO ON OFF)
  string(TOUPPER "${${option}}" want)
  set(${prefix}_TAKEN FALSE PARENT_SCOPE)
  if(want MATCHES "^(1|ON|YES|TRUE|Y)$")
    set(want ON)
  elseif(want MATCHES "^(0|OFF|NO|FALSE|N)$")
    return()
  elseif(NOT want STREQUAL "AUTO")
    message(FATAL_ERROR "${option} must be AUTO, ON or OFF, not '${${option}}'")
  endif()
  # Quiet: the summary line says what was taken.
  pkg_check_modules(${prefix} QUIET IMPORTED_TARGET ${module})
  if(NOT ${prefix}_FOUND)
    if(want STREQUAL "ON")
      message(FATAL_ERROR "${option}=ON, but pkg-config finds no ${module} (${what}): "
                          "install it (Debian: ${debian_package}), point PKG_CONFIG_PATH at "
                          "its .pc file, or configure with -D${option}=AUTO or OFF")
    endif()
    return()
  endif()
  set(${prefix}_TAKEN TRUE PARENT_SCOPE)
  set(${prefix}_VERSION "${${prefix}_VERSION}" PARENT_SCOPE)
endfunction()
