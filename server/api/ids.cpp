#include "api/ids.hpp"

#include <random>

namespace gptoss_server {

std::string new_id(const char* prefix, size_t hex_digits) {
  thread_local std::mt19937_64 rng{(uint64_t{std::random_device{}()} << 32) ^ std::random_device{}()};
  static const char digits[] = "0123456789abcdef";
  std::string id = prefix;
  uint64_t bits = 0;
  for (size_t i = 0; i < hex_digits; ++i) {
    if (i % 16 == 0) bits = rng();
    id += digits[bits & 15];
    bits >>= 4;
  }
  return id;
}

}  // namespace gptoss_server
