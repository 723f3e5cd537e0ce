#include "trainer/rendezvous/rendezvous_wire.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

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

}  // namespace

std::string EncodeMessage(const Message& message) {
  std::string body(1, static_cast<char>(message.type));
  switch (message.type) {
    case MessageType::kHello:
      body.append(kRendezvousMagic);
      PutU32(body, message.rank);
      PutU32(body, message.world_size);
      PutString(body, message.payload);
      break;
    case MessageType::kWelcome:
      body.append(kRendezvousMagic);
      break;
    case MessageType::kSet:
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
    case MessageType::kOk:
    case MessageType::kByeAck:
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
           reader.String(&message.payload, kMaxBodyBytes);
      break;
    case MessageType::kWelcome:
      ok = reader.Magic();
      break;
    case MessageType::kSet:
      ok = reader.String(&message.name, kMaxNameBytes) && reader.String(&message.payload, kMaxBodyBytes);
      break;
    case MessageType::kError:
      ok = reader.String(&message.name, kMaxNameBytes) && reader.String(&message.payload, kMaxBodyBytes) &&
           (IsErrorCode(message.name) || reader.Fail("malformed error code"));
      break;
    case MessageType::kGet:
    case MessageType::kBarrier:
      ok = reader.String(&message.name, kMaxNameBytes);
      break;
    case MessageType::kValue:
      ok = reader.String(&message.payload, kMaxBodyBytes);
      break;
    case MessageType::kBye:
    case MessageType::kOk:
    case MessageType::kByeAck:
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

Result<std::optional<Message>> TakeMessage(std::string& buffer) {
  if (buffer.size() < 4) return std::optional<Message>();
  uint32_t length = GetU32(buffer);
  if (length == 0 || length > kMaxBodyBytes) {
    return ProtocolError("frame length " + std::to_string(length) + " out of range");
  }
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
      return Status::Error("SOCKET_ERROR", std::string("send: ") + std::strerror(errno));
    }
    if (wait.Expired()) return Status::Error(std::string(kWaitTimedOut));
    pollfd entry{fd, POLLOUT, 0};
    poll(&entry, 1, wait.BeginSlice());  // EINTR: loop and try again
    wait.EndSlice();
  }
  return Status::Ok();
}

Result<Message> ReceiveMessage(int fd, PeerWait& wait) {
  std::string buffer;
  char chunk[4096];
  for (;;) {
    // Read no further than the current frame, so bytes of the next reply stay in the socket.
    size_t want = 4;
    if (buffer.size() >= 4) {
      uint32_t length = GetU32(buffer);
      if (length == 0 || length > kMaxBodyBytes) {
        return ProtocolError("frame length " + std::to_string(length) + " out of range");
      }
      want = 4 + static_cast<size_t>(length);
    }
    if (buffer.size() == want && want > 4) {
      Result<std::optional<Message>> taken = TakeMessage(buffer);
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
      return Status::Error("SOCKET_ERROR", std::string("recv: ") + std::strerror(errno));
    }
    if (wait.Expired()) return Status::Error(std::string(kWaitTimedOut));
    pollfd entry{fd, POLLIN, 0};
    poll(&entry, 1, wait.BeginSlice());
    wait.EndSlice();
  }
}

}  // namespace dmlp
