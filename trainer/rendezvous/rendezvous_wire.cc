#include "trainer/rendezvous/rendezvous_wire.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/errno_error.h"

namespace dmlp {
namespace {

Status ProtocolError(const std::string& detail) { return Status::Error("PROTOCOL_ERROR", detail); }

void PutU32(std::string& out, uint32_t value) {
  for (int shift = 0; shift < 32; shift += 8) out.push_back(static_cast<char>((value >> shift) & 0xff));
}

uint32_t GetU32(std::string_view bytes) {
  uint32_t value = 0;
  for (int i = 3; i >= 0; --i) value = (value << 8) | static_cast<uint8_t>(bytes[i]);
  return value;
}

void PutString(std::string& out, std::string_view text) {
  PutU32(out, static_cast<uint32_t>(text.size()));
  out.append(text);
}

// Reads fields off a frame body, remembering the first thing that was wrong.
class BodyReader {
 public:
  explicit BodyReader(std::string_view body) : rest_(body) {}
  bool U32(uint32_t* value) {
    if (rest_.size() < 4) return Fail("truncated integer");
    *value = GetU32(rest_);
    rest_.remove_prefix(4);
    return true;
  }
  bool String(std::string* text, uint32_t max_bytes) {
    uint32_t length = 0;
    if (!U32(&length)) return false;
    if (length > max_bytes) return Fail("string of " + std::to_string(length) + " bytes exceeds limit");
    if (rest_.size() < length) return Fail("truncated string");
    text->assign(rest_.substr(0, length));
    rest_.remove_prefix(length);
    return true;
  }
  bool Magic() {
    if (rest_.substr(0, kRendezvousMagic.size()) != kRendezvousMagic) return Fail("bad magic");
    rest_.remove_prefix(kRendezvousMagic.size());
    return true;
  }
  bool Fail(std::string why) {
    if (error_.empty()) error_ = std::move(why);
    return false;
  }
  bool AtEnd() { return rest_.empty() || Fail(std::to_string(rest_.size()) + " trailing bytes"); }
  const std::string& error() const { return error_; }

 private:
  std::string_view rest_;
  std::string error_;
};

bool IsErrorCode(std::string_view code) {
  if (code.empty()) return false;
  for (char c : code) {
    if (!((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

// The type's bound, or an error naming why the frame is refused before its body.
Status CheckFrameStart(std::string_view buffer, const FrameLimits& limits) {
  const uint32_t length = GetU32(buffer);
  const uint32_t largest = std::max(limits.control_bytes, limits.MaxBody(static_cast<uint8_t>(MessageType::kSet)));
  if (length == 0 || length > largest) {
    return ProtocolError("frame length " + std::to_string(length) + " out of range");
  }
  if (buffer.size() < 5) return Status::Ok();  // the type byte decides the bound
  const uint8_t type = static_cast<uint8_t>(buffer[4]);
  const uint32_t bound = limits.MaxBody(type);
  if (bound == 0) return ProtocolError("message type " + std::to_string(type) + " not accepted here");
  if (length > bound) {
    return ProtocolError("frame length " + std::to_string(length) + " out of range for message type " +
                         std::to_string(type) + " (at most " + std::to_string(bound) + ")");
  }
  return Status::Ok();
}

}  // namespace

uint32_t MaxValueBytes(int world_size) {
  const uint64_t ranks = world_size < 1 ? 1 : static_cast<uint64_t>(world_size);
  return static_cast<uint32_t>((64u << 10) + 512 * ranks);
}

uint32_t FrameLimits::MaxBody(uint8_t type) const {
  switch (static_cast<MessageType>(type)) {
    case MessageType::kSet:
      // type, key (length + bytes), value (length + bytes)
      return value_bytes == 0 ? 0 : 1 + 4 + kMaxNameBytes + 4 + value_bytes;
    case MessageType::kValue:
      return value_bytes == 0 ? 0 : 1 + 4 + value_bytes;
    case MessageType::kHello:
    case MessageType::kWatch:
    case MessageType::kLane:
    case MessageType::kPing:
    case MessageType::kGather:
    case MessageType::kGet:
    case MessageType::kBarrier:
    case MessageType::kBye:
    case MessageType::kWelcome:
    case MessageType::kOk:
    case MessageType::kError:
    case MessageType::kByeAck:
    case MessageType::kPong:
      return control_bytes;
  }
  return 0;  // unknown type
}

std::string EncodeMessage(const Message& message) {
  std::string body(1, static_cast<char>(message.type));
  switch (message.type) {
    case MessageType::kHello:
      body.append(kRendezvousMagic);
      PutU32(body, message.rank);
      PutU32(body, message.world_size);
      PutString(body, message.job_id);
      PutString(body, message.payload);
      break;
    case MessageType::kWatch:
    case MessageType::kLane:
      body.append(kRendezvousMagic);
      PutU32(body, message.rank);
      PutString(body, message.job_id);
      break;
    case MessageType::kWelcome:
      body.append(kRendezvousMagic);
      break;
    case MessageType::kSet:
    case MessageType::kGather:
    case MessageType::kError:
      PutString(body, message.name);
      PutString(body, message.payload);
      break;
    case MessageType::kGet:
    case MessageType::kBarrier:
      PutString(body, message.name);
      break;
    case MessageType::kValue:
      PutString(body, message.payload);
      break;
    case MessageType::kBye:
    case MessageType::kPing:
    case MessageType::kOk:
    case MessageType::kByeAck:
    case MessageType::kPong:
      break;
  }
  std::string frame;
  frame.reserve(4 + body.size());
  PutU32(frame, static_cast<uint32_t>(body.size()));
  frame += body;
  return frame;
}

Result<Message> DecodeBody(std::string_view body) {
  if (body.empty()) return ProtocolError("empty frame");
  Message message;
  message.type = static_cast<MessageType>(static_cast<uint8_t>(body[0]));
  BodyReader reader(body.substr(1));
  bool ok = true;
  switch (message.type) {
    case MessageType::kHello:
      ok = reader.Magic() && reader.U32(&message.rank) && reader.U32(&message.world_size) &&
           reader.String(&message.job_id, kMaxNameBytes) && reader.String(&message.payload, kMaxControlBytes);
      break;
    case MessageType::kWatch:
    case MessageType::kLane:
      ok = reader.Magic() && reader.U32(&message.rank) && reader.String(&message.job_id, kMaxNameBytes);
      break;
    case MessageType::kWelcome:
      ok = reader.Magic();
      break;
    case MessageType::kSet:
      ok = reader.String(&message.name, kMaxNameBytes) && reader.String(&message.payload, UINT32_MAX);
      break;
    case MessageType::kGather:
      ok = reader.String(&message.name, kMaxNameBytes) &&
           reader.String(&message.payload, kMaxGatherValueBytes);
      break;
    case MessageType::kError:
      ok = reader.String(&message.name, kMaxNameBytes) && reader.String(&message.payload, kMaxControlBytes) &&
           (IsErrorCode(message.name) || reader.Fail("malformed error code"));
      break;
    case MessageType::kGet:
    case MessageType::kBarrier:
      ok = reader.String(&message.name, kMaxNameBytes);
      break;
    case MessageType::kValue:
      ok = reader.String(&message.payload, UINT32_MAX);  // the frame's bound already limits it
      break;
    case MessageType::kBye:
    case MessageType::kPing:
    case MessageType::kOk:
    case MessageType::kByeAck:
    case MessageType::kPong:
      break;
    default:
      return ProtocolError("unknown message type " + std::to_string(static_cast<uint8_t>(body[0])));
  }
  if (!ok || !reader.AtEnd()) {
    return ProtocolError("message type " + std::to_string(static_cast<uint8_t>(body[0])) + ": " +
                         reader.error());
  }
  return message;
}

std::string EncodeGathered(const std::vector<std::string>& values) {
  std::string payload;
  PutU32(payload, static_cast<uint32_t>(values.size()));
  for (const std::string& value : values) PutString(payload, value);
  return payload;
}

Result<std::vector<std::string>> DecodeGathered(std::string_view payload, int world_size) {
  BodyReader reader(payload);
  uint32_t count = 0;
  if (!reader.U32(&count)) return ProtocolError("gather reply: " + reader.error());
  if (count != static_cast<uint32_t>(world_size))
    return ProtocolError("gather reply holds " + std::to_string(count) + " values for " +
                         std::to_string(world_size) + " ranks");
  std::vector<std::string> values(count);
  for (std::string& value : values) {
    if (!reader.String(&value, kMaxGatherValueBytes)) return ProtocolError("gather reply: " + reader.error());
  }
  if (!reader.AtEnd()) return ProtocolError("gather reply: " + reader.error());
  return values;
}

Result<std::optional<Message>> TakeMessage(std::string& buffer, const FrameLimits& limits) {
  if (buffer.size() < 4) return std::optional<Message>();
  DMLP_RETURN_IF_ERROR(CheckFrameStart(buffer, limits));
  const uint32_t length = GetU32(buffer);
  if (buffer.size() < 4 + static_cast<size_t>(length)) return std::optional<Message>();
  Result<Message> message = DecodeBody(std::string_view(buffer).substr(4, length));
  if (!message.ok()) return message.status();
  buffer.erase(0, 4 + static_cast<size_t>(length));
  return std::optional<Message>(std::move(message).value());
}

Status SendAll(int fd, std::string_view bytes, PeerWait& wait) {
  while (!bytes.empty()) {
    ssize_t written = send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (written > 0) {
      bytes.remove_prefix(static_cast<size_t>(written));
      continue;
    }
    if (written < 0 && errno == EINTR) continue;
    if (written < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
      if (errno == EPIPE || errno == ECONNRESET) return Status::Error(std::string(kConnectionClosed));
      return ErrnoError("SOCKET_ERROR", "send");
    }
    if (wait.Expired()) return Status::Error(std::string(kWaitTimedOut));
    pollfd entry{fd, POLLOUT, 0};
    poll(&entry, 1, wait.BeginSlice());  // EINTR: loop and try again
    wait.EndSlice();
  }
  return Status::Ok();
}

Result<Message> ReceiveMessage(int fd, PeerWait& wait, const FrameLimits& limits) {
  std::string buffer;
  char chunk[4096];
  for (;;) {
    // Read no further than the current frame, so bytes of the next reply stay
    // in the socket: the length and type first (5 bytes), then the body.
    size_t want = buffer.size() < 5 ? 5 : 0;
    if (buffer.size() >= 4) {
      DMLP_RETURN_IF_ERROR(CheckFrameStart(buffer, limits));
      if (buffer.size() >= 5) want = 4 + static_cast<size_t>(GetU32(buffer));
    }
    if (buffer.size() == want && want >= 5) {
      Result<std::optional<Message>> taken = TakeMessage(buffer, limits);
      if (!taken.ok()) return taken.status();
      return std::move(*taken.value());
    }
    size_t missing = want - buffer.size();
    ssize_t got = recv(fd, chunk, std::min(missing, sizeof(chunk)), 0);
    if (got > 0) {
      buffer.append(chunk, static_cast<size_t>(got));
      continue;
    }
    if (got == 0) return Status::Error(std::string(kConnectionClosed));
    if (errno == EINTR) continue;
    if (errno == ECONNRESET) return Status::Error(std::string(kConnectionClosed));
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      return ErrnoError("SOCKET_ERROR", "recv");
    }
    if (wait.Expired()) return Status::Error(std::string(kWaitTimedOut));
    pollfd entry{fd, POLLIN, 0};
    poll(&entry, 1, wait.BeginSlice());
    wait.EndSlice();
  }
}

}  // namespace dmlp
