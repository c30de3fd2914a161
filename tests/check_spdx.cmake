# SPDX-License-Identifier: MIT
# Fails when a file the project writes (its sources, headers, tests, scripts
# and build files) lacks its SPDX-License-Identifier line in its first four
# lines (LICENSE, debian/copyright). Run as: cmake -DSRC=<source dir> -P
# check_spdx.cmake. Works on a tree without git (a package build's copy).
if(NOT SRC)
  message(FATAL_ERROR "check_spdx.cmake: -DSRC=<source dir> is required")
endif()
file(GLOB_RECURSE files RELATIVE ${SRC}
  ${SRC}/src/* ${SRC}/include/* ${SRC}/deps/* ${SRC}/tests/* ${SRC}/scripts/*
  ${SRC}/cmake/* ${SRC}/completions/* ${SRC}/examples/*)
list(APPEND files CMakeLists.txt Makefile .ci/run debian/rules)
set(missing "")
foreach(f ${files})
  if(f MATCHES "/corpus/|/__pycache__/|\\.md$|\\.pyc$")
    continue()
  endif()
  if(NOT EXISTS ${SRC}/${f})
    continue()
  endif()
  file(STRINGS ${SRC}/${f} head LIMIT_COUNT 4)
  string(FIND "${head}" "SPDX-License-Identifier: MIT" at)
  if(at EQUAL -1)
    list(APPEND missing ${f})
  endif()
endforeach()
list(LENGTH files n)
if(missing)
  string(REPLACE ";" "\n  " missing "${missing}")
  message(FATAL_ERROR "files without an SPDX-License-Identifier: MIT line:\n  ${missing}")
endif()
message(STATUS "${n} files, each with its SPDX-License-Identifier line")
