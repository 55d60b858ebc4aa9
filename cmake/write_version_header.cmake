# Writes the version header (src/core/version.h.in) with the git commit of the
# source tree as it is at build time, not as it was when CMake last ran: run on
# every build (CMakeLists.txt, target tqlab_version_header). configure_file
# leaves the file untouched when its text is unchanged, so nothing recompiles
# until the commit moves.
# Arguments (-D): SOURCE_DIR, INPUT, OUTPUT, PROJECT_VERSION.
execute_process(COMMAND git rev-parse --short=12 HEAD
  WORKING_DIRECTORY ${SOURCE_DIR} OUTPUT_VARIABLE TQLAB_GIT_COMMIT
  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT TQLAB_GIT_COMMIT)
  set(TQLAB_GIT_COMMIT "unknown")
endif()
configure_file(${INPUT} ${OUTPUT} @ONLY)
