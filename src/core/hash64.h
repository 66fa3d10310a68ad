// core/hash64: a fast 64-bit non-cryptographic hash, for checksums of files this program
// writes and reads back (it catches a torn or flipped byte, not an attacker) and for the
// token-prefix chains of the prompt cache.
// Contract: hash64(data, n, seed) is a pure function of the bytes, the length and the seed,
// the same on every run and machine (little-endian loads); it reads 32 bytes per round, so a
// gigabyte takes a fraction of a second. Hash64Stream folds the hashes of a sequence of
// chunks: two writers that feed the same chunks in the same order get the same value.
// chain_next(h, token) extends a prefix hash by one token (the chain of a token list is
// chain_next applied from kChainSeed), so a prefix's hash is known without rereading it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace k3 {

namespace hash_detail {
constexpr uint64_t kP1 = 0x9E3779B185EBCA87ull, kP2 = 0xC2B2AE3D27D4EB4Full, kP3 = 0x165667B19E3779F9ull;
inline uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
inline uint64_t load64(const unsigned char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
inline uint64_t round(uint64_t acc, uint64_t w) { return rotl(acc + w * kP2, 31) * kP1; }
// Spreads every input bit over the whole word (the murmur3 finaliser).
inline uint64_t avalanche(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 33;
  return h;
}
}  // namespace hash_detail

inline uint64_t hash64(const void* data, size_t n, uint64_t seed = 0) {
  using namespace hash_detail;
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t a = seed + kP1 + kP2, b = seed + kP2, c = seed, d = seed - kP1;
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    a = round(a, load64(p + i));
    b = round(b, load64(p + i + 8));
    c = round(c, load64(p + i + 16));
    d = round(d, load64(p + i + 24));
  }
  uint64_t h = rotl(a, 1) + rotl(b, 7) + rotl(c, 12) + rotl(d, 18) + static_cast<uint64_t>(n);
  for (; i + 8 <= n; i += 8) h = rotl(h ^ round(0, load64(p + i)), 27) * kP1 + kP3;
  for (; i < n; ++i) h = rotl(h ^ (p[i] * kP3), 11) * kP1;
  return avalanche(h);
}

class Hash64Stream {
 public:
  void add(const void* data, size_t n) { h_ = hash_detail::avalanche(h_ ^ hash64(data, n, ++k_)); }
  uint64_t value() const { return h_; }

 private:
  uint64_t h_ = 0x4b33u, k_ = 0;
};

constexpr uint64_t kChainSeed = 0x6b33636861696e00ull;  // "k3chain"
inline uint64_t chain_next(uint64_t h, int32_t token) {
  return hash_detail::avalanche(h ^ (static_cast<uint64_t>(static_cast<uint32_t>(token)) + hash_detail::kP3));
}

}  // namespace k3
