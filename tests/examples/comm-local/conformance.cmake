# cmake -DSUITE=.../bin/ptdp-comm-conformance -DPLUGIN=.../libptdp-comm-local.so -DREPORT=... -P conformance.cmake
# Runs the installed communicator conformance suite against the example and checks that every
# test passed, or was skipped only because it is for communicators that cannot move host memory.
cmake_minimum_required(VERSION 3.25)

execute_process(
  COMMAND ${CMAKE_COMMAND} -E env PTDP_CONFORMANCE_COMM=${PLUGIN} ${SUITE} --gtest_output=json:${REPORT}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the conformance suite failed on ${PLUGIN} (${rc}):\n${out}\n${err}")
endif()

file(READ ${REPORT} report)
string(JSON suites LENGTH "${report}" testsuites)
set(passed 0)
math(EXPR last_suite "${suites} - 1")
foreach(s RANGE ${last_suite})
  string(JSON cases LENGTH "${report}" testsuites ${s} testsuite)
  math(EXPR last_case "${cases} - 1")
  foreach(c RANGE ${last_case})
    string(JSON name GET "${report}" testsuites ${s} testsuite ${c} name)
    string(JSON result GET "${report}" testsuites ${s} testsuite ${c} result)
    string(JSON failures ERROR_VARIABLE no_failures LENGTH "${report}" testsuites ${s} testsuite ${c} failures)
    if(NOT no_failures AND failures GREATER 0)
      message(FATAL_ERROR "${name} failed:\n${out}")
    elseif(result STREQUAL "SKIPPED" AND NOT name MATCHES "^RefusesMemoryItDoesNotMove/")
      message(FATAL_ERROR "${name} was skipped: only RefusesMemoryItDoesNotMove may be, as comm-local moves host memory:\n${out}")
    elseif(result STREQUAL "COMPLETED")
      math(EXPR passed "${passed} + 1")
    endif()
  endforeach()
endforeach()
if(passed EQUAL 0)
  message(FATAL_ERROR "the conformance suite ran no test on ${PLUGIN}:\n${out}")
endif()
message(STATUS "comm-local passes ${passed} conformance tests")
