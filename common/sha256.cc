#include "common/sha256.h"

#include <algorithm>

#include <openssl/evp.h>

#include <stdexcept>

namespace dmlp {

struct Sha256::Context {
  EVP_MD_CTX* ctx = nullptr;
  Context() : ctx(EVP_MD_CTX_new()) {
    // Allocation or init failure here means OpenSSL itself is unusable; there
    // is no meaningful recovery for a digest, so it is a programming error.
    if (ctx == nullptr || EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr) != 1)
      throw std::runtime_error("SHA256_INIT_FAILED");
  }
  ~Context() { EVP_MD_CTX_free(ctx); }
};

Sha256::Sha256() : context_(std::make_unique<Context>()) {}
Sha256::~Sha256() = default;
Sha256::Sha256(Sha256&&) noexcept = default;
Sha256& Sha256::operator=(Sha256&&) noexcept = default;

// OpenSSL's SHA-NI loop leaves fetching its input to the hardware
// prefetchers, and a state image of tens of MB streams from L3 or memory:
// measured here, 1.13 GB/s on a 31.6 MB buffer against 1.70 GB/s on one
// that sits in L2 (what `openssl speed` hashes). Fed in 1 KiB pieces, each
// with the piece two ahead prefetched, the same buffer hashes at 1.67 GB/s.
// The bytes and their order are unchanged, so is the digest.
constexpr size_t kPiece = 1024;
constexpr size_t kPiecesAhead = 2;

void Sha256::Update(const void* data, size_t size) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  for (size_t offset = 0; offset < size; offset += kPiece) {
    const size_t ahead = offset + kPiecesAhead * kPiece;
    for (size_t line = ahead; line < ahead + kPiece && line < size; line += 64) __builtin_prefetch(bytes + line);
    EVP_DigestUpdate(context_->ctx, bytes + offset, std::min(kPiece, size - offset));
  }
}

Sha256 Sha256::Clone() const {
  Sha256 copy;
  EVP_MD_CTX_copy_ex(copy.context_->ctx, context_->ctx);
  return copy;
}

std::array<uint8_t, 32> Sha256::Finish() {
  std::array<uint8_t, 32> digest{};
  unsigned int length = 0;
  EVP_DigestFinal_ex(context_->ctx, digest.data(), &length);
  EVP_DigestInit_ex(context_->ctx, EVP_sha256(), nullptr);
  return digest;
}

std::string Sha256::FinishHex() {
  std::array<uint8_t, 32> digest = Finish();
  return ToLowerHex(digest.data(), digest.size());
}

std::string Sha256Hex(const void* data, size_t size) {
  Sha256 hasher;
  hasher.Update(data, size);
  return hasher.FinishHex();
}

std::string ToLowerHex(const uint8_t* data, size_t size) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(2 * size, '0');
  for (size_t i = 0; i < size; ++i) {
    out[2 * i] = kHex[data[i] >> 4];
    out[2 * i + 1] = kHex[data[i] & 15];
  }
  return out;
}

bool IsLowerHexDigest(std::string_view text) {
  if (text.size() != 64) return false;
  for (char c : text)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

}  // namespace dmlp
