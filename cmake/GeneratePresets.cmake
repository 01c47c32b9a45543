# cmake -DCONFIGS_DIR=<dir> -DKINDS=<k1,k2,...> -DTEMPLATE=<presets.cpp.in> -DOUTPUT=<file.cpp>
#       -P GeneratePresets.cmake
# Writes a .cpp holding every <CONFIGS_DIR>/<kind>/*.ini as {"<kind>/<stem>", text}, sorted by
# name. Bytes are emitted as \xNN escapes (each escape ends at the next backslash, so no
# ambiguity), which keeps any file content intact. OUTPUT is only touched when its text changes.
cmake_minimum_required(VERSION 3.21)

function(_hex_literal out bytes_hex)
  # "\x5b\x6d..." split after every newline byte (0a) so the generated file stays readable.
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "\\\\x\\1" _esc "${bytes_hex}")
  string(REPLACE "\\x0a" "\\x0a\"\n        \"" _esc "${_esc}")
  set(${out} "\"${_esc}\"" PARENT_SCOPE)
endfunction()

string(REPLACE "," ";" KINDS "${KINDS}")
set(_files "")
foreach(_kind IN LISTS KINDS)
  file(GLOB _found "${CONFIGS_DIR}/${_kind}/*.ini")
  list(APPEND _files ${_found})
endforeach()
# Sorted by name, not by path: "gpus/h100-96gb-500w.ini" sorts before "gpus/h100.ini" ('-' < '.'),
# while the name "gpus/h100" comes before "gpus/h100-96gb-500w".
set(_names "")
foreach(_file IN LISTS _files)
  string(REGEX REPLACE "\\.ini$" "" _stem_path "${_file}")
  list(APPEND _names "${_stem_path}")
endforeach()
list(SORT _names)
set(_files "")
foreach(_stem_path IN LISTS _names)
  list(APPEND _files "${_stem_path}.ini")
endforeach()

set(PRESET_ENTRIES "")
set(PRESET_COUNT 0)
foreach(_file IN LISTS _files)
  if(IS_DIRECTORY "${_file}")
    continue()
  endif()
  file(RELATIVE_PATH _rel "${CONFIGS_DIR}" "${_file}")
  string(REGEX REPLACE "\\.ini$" "" _name "${_rel}")
  file(READ "${_file}" _hex HEX)
  string(LENGTH "${_hex}" _hex_len)
  math(EXPR _size "${_hex_len} / 2")
  # A plain name is written as is; any other is escaped like the text.
  set(_shown "(name escaped)")
  if(_name MATCHES "^[A-Za-z0-9._/+-]+$")
    set(_name_lit "\"${_name}\"")
    set(_shown "${_rel}")
  else()
    string(HEX "${_name}" _name_hex)
    string(TOLOWER "${_name_hex}" _name_hex)
    _hex_literal(_name_lit "${_name_hex}")
  endif()
  _hex_literal(_text_lit "${_hex}")
  string(LENGTH "${_name}" _name_size)
  string(APPEND PRESET_ENTRIES
         "    // ${_shown}: ${_size} bytes\n"
         "    Preset{std::string_view(${_name_lit}, ${_name_size}),\n"
         "           std::string_view(${_text_lit},\n"
         "                            ${_size})},\n")
  math(EXPR PRESET_COUNT "${PRESET_COUNT} + 1")
endforeach()

configure_file(${TEMPLATE} ${OUTPUT}.tmp @ONLY)
configure_file(${OUTPUT}.tmp ${OUTPUT} COPYONLY)  # keeps OUTPUT's mtime when unchanged
file(REMOVE ${OUTPUT}.tmp)
