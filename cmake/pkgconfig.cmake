# SPDX-License-Identifier: MIT
# shadowsocks-c.pc, for programs that embed the library. What the static
# library needs: the libraries with a .pc file of their own by name, the
# others (libev, mbedtls 2.28 ship none on Debian) as flags. The file is
# written at install time, so that it names the prefix installed into
# (cmake --install --prefix DIR), not only the one configured.
set(SS_PC_REQUIRES "libcares libsodium libpcre2-8 libcjson")
foreach(dep LIBCRYPTO:libcrypto QRENCODE:libqrencode BLAKE3:libblake3)
  string(REPLACE ":" ";" dep "${dep}")
  list(GET dep 0 var)
  list(GET dep 1 module)
  if(${var}_TAKEN)
    string(APPEND SS_PC_REQUIRES " ${module}")
  endif()
endforeach()
# An Mbed TLS from outside the linker's own directories (-DCMAKE_PREFIX_PATH)
# needs its directory named.
set(SS_PC_MBEDTLS "-lmbedtls -lmbedx509 -lmbedcrypto")
get_filename_component(mbedcrypto_dir "${MBEDCRYPTO_LIBRARY}" DIRECTORY)
if(NOT mbedcrypto_dir IN_LIST CMAKE_C_IMPLICIT_LINK_DIRECTORIES)
  set(SS_PC_MBEDTLS "-L${mbedcrypto_dir} -lmbedtls -lmbedx509 -lmbedcrypto")
endif()
set(SS_PC_LIBS "-lev ${SS_PC_MBEDTLS} ${CMAKE_THREAD_LIBS_INIT}")
string(STRIP "${SS_PC_LIBS}" SS_PC_LIBS)

# Everything but the prefix now; the prefix in the install script.
set(SS_PC_PREFIX "%PREFIX%")
foreach(dir LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${dir}}")
    set(SS_PC_${dir} "${CMAKE_INSTALL_${dir}}")
  else()
    set(SS_PC_${dir} "\${prefix}/${CMAKE_INSTALL_${dir}}")
  endif()
endforeach()
configure_file(${CMAKE_CURRENT_LIST_DIR}/shadowsocks-c.pc.in
               ${CMAKE_BINARY_DIR}/shadowsocks-c.pc.tmpl @ONLY)
install(CODE "
  file(READ \"${CMAKE_BINARY_DIR}/shadowsocks-c.pc.tmpl\" pc)
  string(REPLACE \"%PREFIX%\" \"\${CMAKE_INSTALL_PREFIX}\" pc \"\${pc}\")
  file(WRITE \"${CMAKE_BINARY_DIR}/shadowsocks-c.pc\" \"\${pc}\")
")
install(FILES ${CMAKE_BINARY_DIR}/shadowsocks-c.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
