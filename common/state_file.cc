#include "common/state_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/errno_error.h"
#include "common/file_util.h"
#include "common/sha256.h"
#include "common/strict_json.h"

namespace dmlp {
namespace {

constexpr uint64_t kMaxHeaderBytes = uint64_t{100} << 20;

Status Invalid(const std::string& path, const std::string& why) {
  return Status::Error("STATE_FILE_INVALID", path + ": " + why);
}

// Canonical position: params (0), count (1), mu (2), nu (3), then leaf name.
std::pair<int, std::string> CanonicalKey(const std::string& name) {
  auto strip = [&](std::string_view prefix) { return name.substr(prefix.size()); };
  if (name.starts_with(kStateParamsPrefix)) return {0, strip(kStateParamsPrefix)};
  if (name == kStateCountName) return {1, ""};
  if (name.starts_with(kStateMuPrefix)) return {2, strip(kStateMuPrefix)};
  if (name.starts_with(kStateNuPrefix)) return {3, strip(kStateNuPrefix)};
  return {4, name};
}

class Reader {
 public:
  explicit Reader(std::string path) : path_(std::move(path)) {}
  ~Reader() {
    if (fd_ >= 0) ::close(fd_);
  }
  Status Open() {
    fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) {
      if (errno == ENOENT) return Status::Error("NOT_FOUND", path_);
      return ErrnoError("IO_ERROR", "open " + path_);
    }
    struct stat info {};
    if (::fstat(fd_, &info) != 0 || !S_ISREG(info.st_mode))
      return Status::Error("IO_ERROR", path_ + ": not a regular file");
    size_ = static_cast<uint64_t>(info.st_size);
    return Status::Ok();
  }
  uint64_t size() const { return size_; }
  Status ReadAt(uint64_t offset, void* out, size_t length) {
    char* cursor = static_cast<char*>(out);
    while (length > 0) {
      ssize_t got = ::pread(fd_, cursor, length, static_cast<off_t>(offset));
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) return ErrnoError("IO_ERROR", "read " + path_);
      if (got == 0) return Invalid(path_, "file shorter than its header says");
      cursor += got;
      offset += static_cast<uint64_t>(got);
      length -= static_cast<size_t>(got);
    }
    return Status::Ok();
  }
  /// Calls sink(chunk) over [offset, offset + length) in bounded chunks.
  Status Stream(uint64_t offset, uint64_t length,
                const std::function<void(const uint8_t*, size_t)>& sink) {
    std::vector<uint8_t> buffer(std::min<uint64_t>(length, 1 << 20));
    while (length > 0) {
      size_t chunk = static_cast<size_t>(std::min<uint64_t>(length, buffer.size()));
      DMLP_RETURN_IF_ERROR(ReadAt(offset, buffer.data(), chunk));
      sink(buffer.data(), chunk);
      offset += chunk;
      length -= chunk;
    }
    return Status::Ok();
  }

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

Result<StateFileTensor> ParseTensor(const std::string& path, const std::string& name,
                                    const nlohmann::json& entry, uint64_t data_size) {
  if (!entry.is_object()) return Invalid(path, name + ": entry is not an object");
  auto dtype = entry.find("dtype");
  auto shape = entry.find("shape");
  auto offsets = entry.find("data_offsets");
  if (entry.size() != 3 || dtype == entry.end() || shape == entry.end() || offsets == entry.end())
    return Invalid(path, name + ": needs exactly dtype, shape, data_offsets");
  StateFileTensor tensor;
  tensor.name = name;
  if (!dtype->is_string() || (*dtype != "F32" && *dtype != "I32"))
    return Invalid(path, name + ": dtype must be F32 or I32");
  tensor.dtype = dtype->get<std::string>();
  if (!shape->is_array()) return Invalid(path, name + ": shape is not an array");
  uint64_t elements = 1;
  for (const auto& dim : *shape) {
    if (!dim.is_number_unsigned() || dim.get<uint64_t>() > (uint64_t{1} << 40))
      return Invalid(path, name + ": bad dimension");
    uint64_t value = dim.get<uint64_t>();
    if (value != 0 && elements > (uint64_t{1} << 40) / value)
      return Invalid(path, name + ": tensor too large");
    elements *= value;
    tensor.shape.push_back(static_cast<int64_t>(value));
  }
  if (!offsets->is_array() || offsets->size() != 2 || !(*offsets)[0].is_number_unsigned() ||
      !(*offsets)[1].is_number_unsigned())
    return Invalid(path, name + ": data_offsets must be two unsigned integers");
  tensor.begin = (*offsets)[0].get<uint64_t>();
  tensor.end = (*offsets)[1].get<uint64_t>();
  if (tensor.begin > tensor.end || tensor.end > data_size || tensor.end - tensor.begin != 4 * elements)
    return Invalid(path, name + ": data_offsets do not match shape or file size");
  return tensor;
}

// The tensor set must be params/*, opt/count and opt/mu|nu/* mirroring params.
Status CheckCanonicalSet(const std::string& path, const std::vector<StateFileTensor>& tensors) {
  std::vector<const StateFileTensor*> groups[4];
  for (const StateFileTensor& tensor : tensors) {
    auto [group, leaf] = CanonicalKey(tensor.name);
    if (group == 4) return Invalid(path, "unexpected tensor " + tensor.name);
    if ((group == 1) != (tensor.dtype == "I32"))
      return Invalid(path, tensor.name + ": wrong dtype");
    groups[group].push_back(&tensor);
  }
  if (groups[0].empty()) return Invalid(path, "no params tensors");
  if (groups[1].size() != 1 || !groups[1][0]->shape.empty())
    return Invalid(path, "opt/count must be one I32 scalar");
  for (int group : {2, 3}) {
    if (groups[group].size() != groups[0].size())
      return Invalid(path, "optimizer moments do not mirror params");
    for (size_t i = 0; i < groups[0].size(); ++i) {
      if (CanonicalKey(groups[group][i]->name).second != CanonicalKey(groups[0][i]->name).second ||
          groups[group][i]->shape != groups[0][i]->shape)
        return Invalid(path, groups[group][i]->name + " does not mirror " + groups[0][i]->name);
    }
  }
  return Status::Ok();
}

}  // namespace

Status WriteStateFile(const std::string& path, const StateLayout& layout, const uint8_t* image,
                      const std::map<std::string, std::string>& metadata) {
  nlohmann::json header = nlohmann::json::object();
  uint64_t offset = 0;
  auto add = [&](const std::string& name, const char* dtype, const std::vector<int64_t>& shape,
                 uint64_t bytes) {
    header[name] = {{"dtype", dtype}, {"shape", shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  };
  for (const char* prefix : {kStateParamsPrefix, kStateCountName, kStateMuPrefix, kStateNuPrefix}) {
    if (std::string_view(prefix) == kStateCountName) {
      add(kStateCountName, "I32", {}, 4);
      continue;
    }
    for (const StateLeaf& leaf : layout.leaves()) add(prefix + leaf.name, "F32", leaf.shape, 4 * leaf.size);
  }
  header["__metadata__"] = metadata;
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  uint8_t length[8];
  for (int i = 0; i < 8; ++i) length[i] = static_cast<uint8_t>(uint64_t(text.size()) >> (8 * i));
  return WriteFileAtomically(
      path, {std::string_view(reinterpret_cast<const char*>(length), 8), text,
             std::string_view(reinterpret_cast<const char*>(image), layout.image_bytes())});
}

Result<StateFileIndex> ReadStateFileIndex(const std::string& path) {
  Reader reader(path);
  DMLP_RETURN_IF_ERROR(reader.Open());
  if (reader.size() < 8) return Invalid(path, "shorter than 8 bytes");
  uint8_t length_bytes[8];
  DMLP_RETURN_IF_ERROR(reader.ReadAt(0, length_bytes, 8));
  uint64_t header_length = 0;
  for (int i = 7; i >= 0; --i) header_length = (header_length << 8) | length_bytes[i];
  if (header_length > kMaxHeaderBytes || header_length > reader.size() - 8)
    return Invalid(path, "header length out of range");
  std::string text(header_length, '\0');
  DMLP_RETURN_IF_ERROR(reader.ReadAt(8, text.data(), text.size()));
  // Strict: with nlohmann's last-wins parse, a forged first "opt/count" entry
  // would vanish behind a valid second one and the file would pass.
  StrictJsonParse parsed = ParseStrictJson(text);
  if (!parsed.ok()) return Invalid(path, "header: " + parsed.problem);
  const nlohmann::json& header = parsed.value;
  if (!header.is_object()) return Invalid(path, "header is not a JSON object");
  StateFileIndex index;
  index.data_offset = 8 + header_length;
  index.data_size = reader.size() - index.data_offset;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object()) return Invalid(path, "__metadata__ is not an object");
      for (const auto& [key, value] : entry.items()) {
        if (!value.is_string()) return Invalid(path, "__metadata__ values must be strings");
        index.metadata[key] = value.get<std::string>();
      }
      continue;
    }
    DMLP_ASSIGN_OR_RETURN(StateFileTensor tensor, ParseTensor(path, name, entry, index.data_size));
    index.tensors.push_back(std::move(tensor));
  }
  // Data must be covered exactly, without holes or overlaps.
  std::vector<const StateFileTensor*> by_offset;
  for (const auto& tensor : index.tensors) by_offset.push_back(&tensor);
  std::sort(by_offset.begin(), by_offset.end(),
            [](auto* a, auto* b) { return a->begin < b->begin; });
  uint64_t covered = 0;
  for (const StateFileTensor* tensor : by_offset) {
    if (tensor->begin != covered) return Invalid(path, "tensor data has holes or overlaps");
    covered = tensor->end;
  }
  if (covered != index.data_size) return Invalid(path, "data section length does not match tensors");
  std::sort(index.tensors.begin(), index.tensors.end(), [](const auto& a, const auto& b) {
    return CanonicalKey(a.name) < CanonicalKey(b.name);
  });
  DMLP_RETURN_IF_ERROR(CheckCanonicalSet(path, index.tensors));
  return index;
}

Result<StateDigests> DigestStateFile(const std::string& path) {
  DMLP_ASSIGN_OR_RETURN(StateFileIndex index, ReadStateFileIndex(path));
  Reader reader(path);
  DMLP_RETURN_IF_ERROR(reader.Open());
  Sha256 whole, params, opt;
  for (const StateFileTensor& tensor : index.tensors) {
    const bool is_param = CanonicalKey(tensor.name).first == 0;
    DMLP_RETURN_IF_ERROR(reader.Stream(index.data_offset + tensor.begin, tensor.end - tensor.begin,
                                       [&](const uint8_t* data, size_t size) {
                                         whole.Update(data, size);
                                         (is_param ? params : opt).Update(data, size);
                                       }));
  }
  return StateDigests{whole.FinishHex(), params.FinishHex(), opt.FinishHex()};
}

Result<std::vector<uint8_t>> LoadStateImage(const std::string& path, const StateLayout& layout) {
  DMLP_ASSIGN_OR_RETURN(StateFileIndex index, ReadStateFileIndex(path));
  const size_t leaf_count = layout.leaves().size();
  if (index.tensors.size() != 3 * leaf_count + 1)
    return Invalid(path, "tensor count does not match the model");
  for (size_t i = 0; i < leaf_count; ++i) {
    const StateFileTensor& tensor = index.tensors[i];
    const StateLeaf& leaf = layout.leaves()[i];
    if (tensor.name != kStateParamsPrefix + leaf.name || tensor.shape != leaf.shape)
      return Invalid(path, tensor.name + " does not match the model's " + leaf.name);
  }
  Reader reader(path);
  DMLP_RETURN_IF_ERROR(reader.Open());
  std::vector<uint8_t> image(layout.image_bytes());
  size_t offset = 0;
  for (const StateFileTensor& tensor : index.tensors) {
    DMLP_RETURN_IF_ERROR(reader.ReadAt(index.data_offset + tensor.begin, image.data() + offset,
                                       tensor.end - tensor.begin));
    offset += tensor.end - tensor.begin;
  }
  return image;
}

}  // namespace dmlp
