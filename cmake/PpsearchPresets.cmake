# Presets compiled into the binary: every configs/<kind>/*.ini (kind = models, gpus, clusters,
# searches) becomes an entry {"<kind>/<stem>", file text} of a generated .cpp, looked up through
# include/ppsearch/io/presets.hpp.
#
# ppsearch_add_presets_library(<target> <configs-dir>)
#   Rebuilds when an .ini changes (custom command DEPENDS on every file), and when one is
#   added or removed (CONFIGURE_DEPENDS glob -> re-configure -> the file list below changes).
#   The text is emitted as \xNN escapes, so any file content survives (quotes, backslashes,
#   ")delim\"" sequences, CRLF, UTF-8, @VAR@ or ${VAR} text).
include_guard(GLOBAL)

set(PPSEARCH_PRESET_KINDS models gpus clusters searches)

function(ppsearch_add_presets_library target configs_dir)
  set(_files "")
  foreach(_kind IN LISTS PPSEARCH_PRESET_KINDS)
    file(GLOB _found CONFIGURE_DEPENDS "${configs_dir}/${_kind}/*.ini")
    list(APPEND _files ${_found})
  endforeach()
  list(SORT _files)

  list(JOIN PPSEARCH_PRESET_KINDS "," _kinds)
  set(_gen_dir ${CMAKE_CURRENT_BINARY_DIR}/generated)
  set(_out ${_gen_dir}/${target}_data.cpp)
  # Rewritten only when the set of files changes; a dependency of the generator, so adding or
  # removing a preset regenerates even when the new file's mtime is old (Makefile generators).
  list(JOIN _files "\n" _listing)
  file(CONFIGURE OUTPUT ${_gen_dir}/${target}_files.txt CONTENT "${_listing}\n" @ONLY)

  add_custom_command(
    OUTPUT ${_out}
    COMMAND ${CMAKE_COMMAND} -DCONFIGS_DIR=${configs_dir} -DOUTPUT=${_out}
            -DKINDS=${_kinds}
            -DTEMPLATE=${PROJECT_SOURCE_DIR}/cmake/presets.cpp.in
            -P ${PROJECT_SOURCE_DIR}/cmake/GeneratePresets.cmake
    DEPENDS ${_files} ${_gen_dir}/${target}_files.txt
            ${PROJECT_SOURCE_DIR}/cmake/GeneratePresets.cmake
            ${PROJECT_SOURCE_DIR}/cmake/presets.cpp.in
    COMMENT "Embedding presets from ${configs_dir} into ${target}"
    VERBATIM)

  add_library(${target} STATIC ${_out})
  target_include_directories(${target} PUBLIC ${PROJECT_SOURCE_DIR}/include)
  ppsearch_target_defaults(${target})
  list(LENGTH _files _n)
  message(STATUS "${target}: ${_n} preset file(s) from ${configs_dir}")
endfunction()
