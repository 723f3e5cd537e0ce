// defines: MessageType, Message, EncodeMessage, TakeMessage, SendMessage, ReceiveMessage
//
// The rendezvous protocol's framing, shared by the coordinator (server) and
// every rank (client). One frame:
//
//   u32 LE body_length   1 <= body_length <= kMaxBodyBytes
//   u8     type          MessageType
//   fields               by type, below; u32 LE integers, strings as u32 LE length + bytes
//
//   HELLO    magic[8] "DMLPRDV1", u32 rank, u32 world_size, str plan_fingerprint
//   SET      str key, str value          -> OK
//   GET      str key                     -> VALUE str value (when the key is present)
//   BARRIER  str name                    -> OK (when every rank arrived)
//   BYE                                  -> BYE_ACK
//   WELCOME  magic[8]                    (reply to HELLO once every rank joined)
//   ERROR    str code, str detail        (reply to anything; code is [A-Z0-9_]+)
//
// A frame whose length, type, field sizes or trailing bytes are wrong is a
// PROTOCOL_ERROR; nothing in it is trusted.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "trainer/rendezvous/peer_wait.h"

namespace dmlp {

enum class MessageType : uint8_t {
  kHello = 1,
  kSet = 2,
  kGet = 3,
  kBarrier = 4,
  kBye = 5,
  kWelcome = 16,
  kOk = 17,
  kValue = 18,
  kError = 19,
  kByeAck = 20,
};

inline constexpr std::string_view kRendezvousMagic = "DMLPRDV1";
/// Largest frame body; values (Gloo addresses, an NCCL unique id) are far smaller.
inline constexpr uint32_t kMaxBodyBytes = 64u << 20;
/// Largest key, barrier name or error code.
inline constexpr uint32_t kMaxNameBytes = 4096;

/// One decoded frame. Which fields are used depends on the type.
struct Message {
  MessageType type = MessageType::kOk;
  uint32_t rank = 0;        // HELLO
  uint32_t world_size = 0;  // HELLO
  std::string name;         // SET/GET key, BARRIER name, ERROR code
  std::string payload;      // SET/VALUE value, HELLO fingerprint, ERROR detail
};

/// The whole frame (length prefix included) for `message`.
std::string EncodeMessage(const Message& message);
/// Decodes one frame body (type byte onwards); PROTOCOL_ERROR when malformed.
Result<Message> DecodeBody(std::string_view body);
/// Takes the first complete frame off the front of `buffer` (nullopt: need more
/// bytes). A length prefix out of range fails at once, before its body arrives.
Result<std::optional<Message>> TakeMessage(std::string& buffer);

/// Outcome codes of the blocking helpers below, before the caller names what it awaited.
inline constexpr std::string_view kWaitTimedOut = "RENDEZVOUS_TIMEOUT";
inline constexpr std::string_view kConnectionClosed = "CONNECTION_CLOSED";

/// Writes `bytes` to the non-blocking socket `fd`, polling in `wait`'s slices.
/// Handles EINTR and partial writes; never raises SIGPIPE.
Status SendAll(int fd, std::string_view bytes, PeerWait& wait);
/// Reads one frame from the non-blocking socket `fd` (partial reads, EINTR).
/// Codes: kWaitTimedOut, kConnectionClosed, PROTOCOL_ERROR, SOCKET_ERROR.
Result<Message> ReceiveMessage(int fd, PeerWait& wait);

}  // namespace dmlp
