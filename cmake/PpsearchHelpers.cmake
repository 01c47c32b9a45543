# Shared target settings for ppsearch's own targets.
#
# ppsearch_warnings: INTERFACE, linked PRIVATE (never exported): -Wall -Wextra -Wpedantic -Wshadow,
#                    plus -Werror when PPSEARCH_WERROR is ON.
# ppsearch_flags:    INTERFACE, sanitizer compile and link options when PPSEARCH_SANITIZE is ON.
#                    Kept out of the global CMAKE_CXX_FLAGS so third-party code is untouched.
include_guard(GLOBAL)

add_library(ppsearch_warnings INTERFACE)
target_compile_options(ppsearch_warnings INTERFACE
  $<$<CXX_COMPILER_ID:GNU,Clang,AppleClang>:-Wall -Wextra -Wpedantic -Wshadow>
  $<$<AND:$<BOOL:${PPSEARCH_WERROR}>,$<CXX_COMPILER_ID:GNU,Clang,AppleClang>>:-Werror>)

add_library(ppsearch_flags INTERFACE)
if(PPSEARCH_SANITIZE)
  set(_ppsearch_san -fsanitize=address,undefined -fno-omit-frame-pointer
                    -fno-sanitize-recover=all)
  target_compile_options(ppsearch_flags INTERFACE ${_ppsearch_san})
  target_link_options(ppsearch_flags INTERFACE -fsanitize=address,undefined)
endif()

# ppsearch_target_defaults(<target>): warnings + flags + C++17 on one of our own targets.
function(ppsearch_target_defaults tgt)
  get_target_property(_type ${tgt} TYPE)
  if(_type STREQUAL "INTERFACE_LIBRARY")
    return()
  endif()
  target_link_libraries(${tgt} PRIVATE ppsearch_warnings ppsearch_flags)
  target_compile_features(${tgt} PUBLIC cxx_std_17)
endfunction()

# ppsearch_glob_sources(<out-var> <dir>...): the sorted *.cpp files of the given source folders
# (relative to the project root). CONFIGURE_DEPENDS makes the build re-glob, so a new file is
# picked up by a plain rebuild. A missing folder yields nothing.
function(ppsearch_glob_sources out)
  set(_all "")
  foreach(_dir IN LISTS ARGN)
    file(GLOB _found CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/${_dir}/*.cpp")
    list(APPEND _all ${_found})
  endforeach()
  list(SORT _all)
  set(${out} "${_all}" PARENT_SCOPE)
endfunction()

# ppsearch_add_module(<name> DIRS <dir>... [PUBLIC_LINK <t>...] [PRIVATE_LINK <t>...])
#   STATIC library ppsearch_<name> from the globbed folders, with the alias ppsearch::<name>.
#   With no sources yet it becomes an INTERFACE library carrying the include dir and the
#   PUBLIC links, so dependants still configure and link.
function(ppsearch_add_module name)
  cmake_parse_arguments(ARG "" "" "DIRS;PUBLIC_LINK;PRIVATE_LINK" ${ARGN})
  set(tgt ppsearch_${name})
  ppsearch_glob_sources(_srcs ${ARG_DIRS})
  if(_srcs)
    add_library(${tgt} STATIC ${_srcs})
    target_include_directories(${tgt} PUBLIC ${PROJECT_SOURCE_DIR}/include)
    target_link_libraries(${tgt} PUBLIC ${ARG_PUBLIC_LINK} PRIVATE ${ARG_PRIVATE_LINK})
    ppsearch_target_defaults(${tgt})
    list(LENGTH _srcs _n)
    message(STATUS "${tgt}: STATIC, ${_n} source file(s)")
  else()
    add_library(${tgt} INTERFACE)
    target_include_directories(${tgt} INTERFACE ${PROJECT_SOURCE_DIR}/include)
    target_link_libraries(${tgt} INTERFACE ${ARG_PUBLIC_LINK})
    target_compile_features(${tgt} INTERFACE cxx_std_17)
    message(STATUS "${tgt}: INTERFACE (no sources yet in ${ARG_DIRS})")
  endif()
  add_library(ppsearch::${name} ALIAS ${tgt})
endfunction()
