// defines: MessageType, Message, EncodeMessage, TakeMessage, SendMessage, ReceiveMessage,
//          kMaxGatherValueBytes, EncodeGathered, DecodeGathered
//
// The rendezvous protocol's framing, shared by the coordinator (server) and
// every rank (client). One frame:
//
//   u32 LE body_length   1 <= body_length <= the type's bound (FrameLimits)
//   u8     type          MessageType
//   fields               by type, below; u32 LE integers, strings as u32 LE length + bytes
//
//   HELLO    magic[8] "DMLPRDV2", u32 rank, u32 world_size, str job_id, str plan_fingerprint
//   WATCH    magic[8], u32 rank, str job_id   (opens a rank's liveness connection, no reply)
//   LANE     magic[8], u32 rank, str job_id   -> OK (opens another request connection of a joined rank)
//   PING                                 -> PONG, or ERROR PEER_LOST once a rank is lost
//   SET      str key, str value          -> OK
//   GET      str key                     -> VALUE str value (when the key is present)
//   BARRIER  str name                    -> OK (when every rank arrived)
//   GATHER   str name, str value         -> VALUE (when every rank gave its value:
//                                           u32 count, then count x str value, by rank)
//   BYE                                  -> BYE_ACK
//   WELCOME  magic[8]                    (reply to HELLO once every rank joined)
//   ERROR    str code, str detail        (reply to anything; code is [A-Z0-9_]+)
//
// A frame whose length, type, field sizes or trailing bytes are wrong is a
// PROTOCOL_ERROR; nothing in it is trusted. Bounds are per type and checked on
// the first five bytes, before a body is buffered: control frames are small
// (kMaxControlBytes); only SET and VALUE carry values, bounded by the world size
// (MaxValueBytes), and a connection that has not said HELLO may send no value.
// A GATHER value is at most kMaxGatherValueBytes, so that its reply (every
// rank's value) stays within MaxValueBytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/format/error_codes.h"
#include "common/status.h"
#include "trainer/rendezvous/peer_wait.h"

namespace dmlp {

enum class MessageType : uint8_t {
  kHello = 1,
  kSet = 2,
  kGet = 3,
  kBarrier = 4,
  kBye = 5,
  kWatch = 6,
  kPing = 7,
  kGather = 8,
  kLane = 9,
  kWelcome = 16,
  kOk = 17,
  kValue = 18,
  kError = 19,
  kByeAck = 20,
  kPong = 21,
};

inline constexpr std::string_view kRendezvousMagic = "DMLPRDV2";
/// Largest body of a frame that carries no value (HELLO with its fingerprint, GET, ERROR, ...).
inline constexpr uint32_t kMaxControlBytes = 64u << 10;
/// Largest key, barrier name, error code or job id.
inline constexpr uint32_t kMaxNameBytes = 4096;

/// Largest value one rank gives to a GATHER (a digest, a device label).
inline constexpr uint32_t kMaxGatherValueBytes = 256;

/// Largest value a job of `world_size` ranks stores: Gloo stores one address
/// per peer (measured: 128 + 8 bytes each with this Gloo), the NCCL unique id
/// 128 bytes; 512 bytes per rank plus 64 KiB leaves room for both.
uint32_t MaxValueBytes(int world_size);

/// What one end of a connection accepts; a frame over its type's bound fails
/// before its body is read.
struct FrameLimits {
  uint32_t control_bytes = kMaxControlBytes;
  uint32_t value_bytes = 0;  // SET / VALUE payloads; 0: none accepted
  /// The largest body of a frame of `type`; 0 for a type never accepted.
  uint32_t MaxBody(uint8_t type) const;
};

/// One decoded frame. Which fields are used depends on the type.
struct Message {
  MessageType type = MessageType::kOk;
  uint32_t rank = 0;        // HELLO, WATCH, LANE
  uint32_t world_size = 0;  // HELLO
  std::string name;         // SET/GET key, BARRIER/GATHER name, ERROR code
  std::string payload;      // SET/VALUE/GATHER value, HELLO fingerprint, ERROR detail
  std::string job_id;       // HELLO, WATCH, LANE
};

/// The whole frame (length prefix included) for `message`.
std::string EncodeMessage(const Message& message);
/// Decodes one frame body (type byte onwards); PROTOCOL_ERROR when malformed.
Result<Message> DecodeBody(std::string_view body);
/// The VALUE payload answering a GATHER: every rank's value, in rank order.
std::string EncodeGathered(const std::vector<std::string>& values);
/// The values of a GATHER reply; PROTOCOL_ERROR unless it holds exactly `world_size` values.
Result<std::vector<std::string>> DecodeGathered(std::string_view payload, int world_size);
/// Takes the first complete frame off the front of `buffer` (nullopt: need more
/// bytes). A length out of `limits` for its type fails at once, before its body arrives.
Result<std::optional<Message>> TakeMessage(std::string& buffer, const FrameLimits& limits);

/// Writes `bytes` to the non-blocking socket `fd`, polling in `wait`'s slices.
/// Handles EINTR and partial writes; never raises SIGPIPE.
Status SendAll(int fd, std::string_view bytes, PeerWait& wait);
/// Reads one frame within `limits` from the non-blocking socket `fd` (partial reads, EINTR).
/// Codes: kRendezvousTimeout, kConnectionClosed, kProtocolError, kSocketError.
Result<Message> ReceiveMessage(int fd, PeerWait& wait, const FrameLimits& limits);

}  // namespace dmlp
