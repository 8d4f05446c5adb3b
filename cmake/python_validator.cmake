# gptoss_python_with_jsonschema(VAR): the python3 that has the jsonschema package (Debian
# python3-jsonschema, from scripts/setup.sh), for the tests that validate structured output
# with it: the one CMake found, else Debian's /usr/bin/python3 (a pyenv python first on PATH
# lacks Debian's packages); the one CMake found if neither has it (the tests then say so).
function(gptoss_python_with_jsonschema var)
  set(python ${Python3_EXECUTABLE})
  execute_process(COMMAND ${python} -c "import jsonschema" RESULT_VARIABLE missing OUTPUT_QUIET ERROR_QUIET)
  if(NOT missing EQUAL 0 AND EXISTS /usr/bin/python3)
    execute_process(COMMAND /usr/bin/python3 -c "import jsonschema" RESULT_VARIABLE missing OUTPUT_QUIET ERROR_QUIET)
    if(missing EQUAL 0)
      set(python /usr/bin/python3)
    endif()
  endif()
  set(${var} ${python} PARENT_SCOPE)
endfunction()
