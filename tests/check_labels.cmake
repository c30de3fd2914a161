# SPDX-License-Identifier: MIT
# cmake -DCTEST=PATH -P check_labels.cmake, run in a build directory: fails
# when a test registered there carries no label saying what it needs
# (tests/README.md), or a label outside the known ones (a typo would take a
# test out of every `ctest -L` selection).
cmake_minimum_required(VERSION 3.19) # string(JSON)

# What a test needs; each test has at least one of these.
set(needs unit e2e root slow fuzz package interop)
# Other selections, beside those: `make test-tsan` runs `threads`.
set(extra threads system)

execute_process(COMMAND ${CTEST} --show-only=json-v1
                OUTPUT_VARIABLE json ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "ctest --show-only=json-v1 failed (${rc}): ${err}")
endif()

string(JSON count LENGTH "${json}" tests)
if(count EQUAL 0)
  message(FATAL_ERROR "no test registered in ${CMAKE_CURRENT_BINARY_DIR}")
endif()
set(bad "")
math(EXPR last "${count} - 1")
foreach(i RANGE ${last})
  string(JSON name GET "${json}" tests ${i} name)
  set(labels "")
  string(JSON nprops ERROR_VARIABLE noprops LENGTH "${json}" tests ${i} properties)
  if(NOT noprops AND nprops GREATER 0)
    math(EXPR lastprop "${nprops} - 1")
    foreach(j RANGE ${lastprop})
      string(JSON pname GET "${json}" tests ${i} properties ${j} name)
      if(pname STREQUAL "LABELS")
        string(JSON nlabels LENGTH "${json}" tests ${i} properties ${j} value)
        if(nlabels GREATER 0)
          math(EXPR lastlabel "${nlabels} - 1")
          foreach(k RANGE ${lastlabel})
            string(JSON label GET "${json}" tests ${i} properties ${j} value ${k})
            list(APPEND labels ${label})
          endforeach()
        endif()
      endif()
    endforeach()
  endif()
  set(need_found FALSE)
  foreach(label IN LISTS labels)
    if(label IN_LIST needs)
      set(need_found TRUE)
    elseif(NOT label IN_LIST extra)
      string(APPEND bad "  ${name}: unknown label '${label}'\n")
    endif()
  endforeach()
  if(NOT need_found)
    string(APPEND bad "  ${name}: labels '${labels}' name none of: ${needs}\n")
  endif()
endforeach()

if(bad)
  message(FATAL_ERROR "tests without a label saying what they need (tests/README.md):\n${bad}")
endif()
message(STATUS "${count} tests, each labelled with what it needs")
