# Generated header ppsearch/build_info.hpp (version, git hash, PPSEARCH_HAVE_MPI).
#
# The INTERFACE target ppsearch_build_info carries the include dir of the generated header.
# The header is regenerated on every build by BuildInfo.cmake, which rewrites it only when its
# text changes (a new commit, a dirty tree), so nothing recompiles needlessly.
include_guard(GLOBAL)

set(PPSEARCH_GENERATED_INCLUDE_DIR ${PROJECT_BINARY_DIR}/generated/include)
set(_ppsearch_build_info_args
    -DSOURCE_DIR=${PROJECT_SOURCE_DIR}
    -DTEMPLATE=${PROJECT_SOURCE_DIR}/include/ppsearch/build_info.hpp.in
    -DOUTPUT=${PPSEARCH_GENERATED_INCLUDE_DIR}/ppsearch/build_info.hpp
    -DPPSEARCH_VERSION=${PROJECT_VERSION}
    -DPPSEARCH_HAVE_MPI=${PPSEARCH_HAVE_MPI})

# Once at configure time, so the header exists before the first build.
execute_process(COMMAND ${CMAKE_COMMAND} ${_ppsearch_build_info_args}
                        -P ${PROJECT_SOURCE_DIR}/cmake/BuildInfo.cmake
                RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "generating build_info.hpp failed")
endif()

add_custom_target(ppsearch_build_info_gen
  COMMAND ${CMAKE_COMMAND} ${_ppsearch_build_info_args}
          -P ${PROJECT_SOURCE_DIR}/cmake/BuildInfo.cmake
  BYPRODUCTS ${PPSEARCH_GENERATED_INCLUDE_DIR}/ppsearch/build_info.hpp
  COMMENT "Checking ppsearch/build_info.hpp"
  VERBATIM)

add_library(ppsearch_build_info INTERFACE)
target_include_directories(ppsearch_build_info INTERFACE ${PPSEARCH_GENERATED_INCLUDE_DIR})
add_dependencies(ppsearch_build_info ppsearch_build_info_gen)
add_library(ppsearch::build_info ALIAS ppsearch_build_info)
