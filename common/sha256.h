// defines: Sha256, Sha256Hex, IsLowerHexDigest
//
// Streaming SHA-256 through OpenSSL's EVP interface (SHA-NI / AVX2 code paths
// when the CPU has them). Digests are written as 64 lower-case hex characters.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace dmlp {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(Sha256&&) noexcept;
  Sha256& operator=(Sha256&&) noexcept;

  /// Feeds bytes; may be called any number of times.
  void Update(const void* data, size_t size);
  /// An independent copy of the stream so far (to digest a prefix and go on).
  Sha256 Clone() const;
  /// Ends the stream and returns the digest; the object is reset for reuse.
  std::array<uint8_t, 32> Finish();
  /// Finish() as 64 lower-case hex characters.
  std::string FinishHex();

 private:
  struct Context;
  std::unique_ptr<Context> context_;
};

/// One-shot digest of a byte range, as lower-case hex.
std::string Sha256Hex(const void* data, size_t size);
/// Lower-case hex of arbitrary bytes.
std::string ToLowerHex(const uint8_t* data, size_t size);
/// True for exactly 64 characters of [0-9a-f].
bool IsLowerHexDigest(std::string_view text);

}  // namespace dmlp
