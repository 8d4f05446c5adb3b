# The fuzz and ThreadSanitizer builds (docs/reliability.md); each is its own build directory.
# (GPTOSS_SANITIZE, ASan + UBSan for the whole suite, is set up in the top-level file.)
if(GPTOSS_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "GPTOSS_FUZZ needs clang (libFuzzer): configure with "
                        "-DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14")
  endif()
  # Coverage instrumentation everywhere; the fuzzer's main only in the harness executables.
  # LeakSanitizer is part of ASan and stays on. -O1, as OSS-Fuzz builds: CI builds this from
  # scratch and runs each harness for a fixed time, so compile time is what -O2 would cost.
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all
                      -fno-omit-frame-pointer -gline-tables-only -O1)
  add_link_options(-fsanitize=address,undefined)
endif()

if(GPTOSS_TSAN)
  if(GPTOSS_SANITIZE OR GPTOSS_FUZZ)
    message(FATAL_ERROR "GPTOSS_TSAN cannot be combined with GPTOSS_SANITIZE or GPTOSS_FUZZ")
  endif()
  # -O1 (TSan's documented minimum): CI builds this from scratch for a few short threaded
  # tests, and the server's JSON code compiles far faster at -O1 under TSan.
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer -O1)
  add_link_options(-fsanitize=thread)
endif()
