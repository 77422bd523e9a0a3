# Writes OUT, a header defining HCASIM_GIT_COMMIT: the commit of the source tree SRC
# (`git rev-parse HEAD`, with "-dirty" when tracked files differ from it), or "unknown" outside a
# git checkout or without git. Rewritten only when it changes, so a build recompiles what
# includes it only after a commit. Run at every build by the hcasim_git_commit target.
set(commit "unknown")
find_program(GIT git)
if(GIT)
  execute_process(COMMAND ${GIT} rev-parse HEAD WORKING_DIRECTORY ${SRC}
                  OUTPUT_VARIABLE head OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET
                  RESULT_VARIABLE rc)
  if(rc EQUAL 0 AND NOT head STREQUAL "")
    set(commit "${head}")
    execute_process(COMMAND ${GIT} diff --quiet HEAD -- WORKING_DIRECTORY ${SRC}
                    RESULT_VARIABLE dirty ERROR_QUIET)
    if(NOT dirty EQUAL 0)
      set(commit "${commit}-dirty")
    endif()
  endif()
endif()
set(text "#pragma once\n#define HCASIM_GIT_COMMIT \"${commit}\"\n")
set(old "")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUT}" "${text}")
endif()
