/*
 * libgptoss version: the only place it is written. CMakeLists.txt reads its project version
 * and GPTOSS_ABI_VERSION from here (so gptoss.h compiles as it is, without a build step);
 * the CMake package's version file, gptoss.pc and the Python package follow.
 */
#ifndef GPTOSS_VERSION_H_
#define GPTOSS_VERSION_H_

#define GPTOSS_VERSION_MAJOR 0
#define GPTOSS_VERSION_MINOR 2
#define GPTOSS_VERSION_PATCH 0
#define GPTOSS_VERSION_STRING "0.2.0"

/* The N of libgptoss.so.N. It changes only with an incompatible change of the C ABI
 * (docs/abi.md): a program built against an older libgptoss with the same N keeps running.
 * Bump it only when scripts/abi-check.sh reports an incompatible change, then run
 * scripts/abi-baseline.sh. */
#define GPTOSS_ABI_VERSION 0

#endif /* GPTOSS_VERSION_H_ */
