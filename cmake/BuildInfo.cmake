# cmake -DSOURCE_DIR=... -DTEMPLATE=... -DOUTPUT=... -DPPSEARCH_VERSION=... -DPPSEARCH_HAVE_MPI=...
#       -P BuildInfo.cmake
# Writes OUTPUT from TEMPLATE; configure_file() leaves OUTPUT untouched when the text is equal.
set(PPSEARCH_GIT_HASH "unknown")
find_program(_git git)
if(_git AND EXISTS "${SOURCE_DIR}/.git")
  execute_process(COMMAND ${_git} -C ${SOURCE_DIR} rev-parse --short=12 HEAD
                  OUTPUT_VARIABLE _hash OUTPUT_STRIP_TRAILING_WHITESPACE
                  RESULT_VARIABLE _rc ERROR_QUIET)
  if(_rc EQUAL 0 AND _hash)
    set(PPSEARCH_GIT_HASH "${_hash}")
    execute_process(COMMAND ${_git} -C ${SOURCE_DIR} status --porcelain --untracked-files=no
                    OUTPUT_VARIABLE _changes RESULT_VARIABLE _rc2 ERROR_QUIET)
    if(_rc2 EQUAL 0 AND NOT _changes STREQUAL "")
      string(APPEND PPSEARCH_GIT_HASH "-dirty")
    endif()
  endif()
endif()
configure_file(${TEMPLATE} ${OUTPUT} @ONLY)
