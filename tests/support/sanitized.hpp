#pragma once
// Whether this test program is built with AddressSanitizer (scripts/test.sh's second build).
// Its runs check memory and undefined behaviour, the release build's runs check the numbers,
// so the slowest model tests run part of their matrix there.
namespace gptoss::test {
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif
}  // namespace gptoss::test
