#include "fs_checkpoint_store.hpp"

#include <fcntl.h>
#include <stdio.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <nlohmann/json.hpp>

#include <ptdp/error.hpp>
#include <ptdp/message_text.hpp>

#include "crc32c.hpp"
#include "tensor_region.hpp"

namespace ptdp::ckptfs {

namespace fs = std::filesystem;

namespace {

constexpr const char* kIndexFile = "index.json";
constexpr const char* kStepPrefix = "step-";
constexpr const char* kStagingPrefix = ".staging-step-";
// A committed step is renamed to this before its files are deleted, so it is never listed half gone.
constexpr const char* kRemovingPrefix = ".removing-step-";
// open() proves the folder writable by creating and deleting this file.
constexpr const char* kWriteProbe = ".write-probe";
// Suffixes of a rank's unfinished files, next to its finished "rank-R.safetensors".
constexpr const char* kTmpSuffix = ".tmp";
constexpr const char* kSpoolSuffix = ".spool";

std::string zero_padded(int64_t value, size_t width) {
  std::string digits = std::to_string(value);
  return std::string(digits.size() < width ? width - digits.size() : 0, '0') + digits;
}

std::optional<int64_t> parse_step_folder(const std::string& name, const std::string& prefix) {
  if (name.size() <= prefix.size() || name.size() > prefix.size() + 18 || name.rfind(prefix, 0) != 0)
    return std::nullopt;
  std::string digits = name.substr(prefix.size());
  if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  return std::stoll(digits);
}

// "1, 3-5, 9"
std::string rank_ranges(const std::vector<int>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    out += (out.empty() ? "" : ", ") + std::to_string(ranks[i]);
    if (j > i) out += "-" + std::to_string(ranks[j]);
    i = j + 1;
  }
  return out;
}

std::string hex32(uint32_t value) {
  char text[11];
  std::snprintf(text, sizeof text, "0x%08x", value);
  return text;
}

void check_step_and_rank(int64_t step, int rank) {
  if (step < 0) throw Error("ckpt-fs: step " + std::to_string(step) + " is negative");
  if (rank < 0) throw Error("ckpt-fs: rank " + std::to_string(rank) + " is negative");
}

void make_folder(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error("ckpt-fs: cannot create folder " + dir.string() + ": " + ec.message());
}

void remove_if_present(const fs::path& path) {
  std::error_code ec;
  fs::remove(path, ec);
  if (ec) throw Error("ckpt-fs: cannot remove " + path.string() + ": " + ec.message());
}

std::vector<fs::directory_entry> folder_entries(const fs::path& dir) {
  std::error_code ec;
  std::vector<fs::directory_entry> out;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) out.push_back(*it);
  if (ec) throw Error("ckpt-fs: cannot list " + dir.string() + ": " + ec.message());
  return out;
}

}  // namespace

FsCheckpointStore::FsCheckpointStore(const PluginContext& context)
    : options_{context.config ? context.config->get_bool("fsync") : true} {}

std::string FsCheckpointStore::step_folder_name(int64_t step) { return kStepPrefix + zero_padded(step, 8); }

std::string FsCheckpointStore::staging_folder_name(int64_t step) {
  return kStagingPrefix + zero_padded(step, 8);
}

std::string FsCheckpointStore::rank_file_name(int rank) {
  return "rank-" + zero_padded(rank, 5) + ".safetensors";
}

const fs::path& FsCheckpointStore::root() const {
  if (!root_) throw Error("ckpt-fs: the store was used before open()");
  return *root_;
}

void FsCheckpointStore::open(const std::string& root) {
  const fs::path dir = absolute_folder(root);
  make_folder(dir);
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw Error("ckpt-fs: " + dir.string() + " is not a folder");
  // Found now rather than at the first save, hours into the run. Permission bits alone do not
  // tell (root, read-only mounts, ACLs): only creating a file does. mkostemp picks a fresh
  // name, so ranks (or threads) opening the folder at once never collide.
  std::string probe = (dir / (std::string(kWriteProbe) + "-XXXXXX")).string();
  const int fd = ::mkostemp(probe.data(), O_CLOEXEC);
  if (fd < 0)
    throw Error("ckpt-fs: cannot write in checkpoint folder " + dir.string() + ": " + std::strerror(errno));
  ::close(fd);
  ::unlink(probe.c_str());
  use_root(dir);
}

void FsCheckpointStore::open_existing(const std::string& root) {
  const fs::path dir = absolute_folder(root);
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw Error("ckpt-fs: " + dir.string() + (fs::exists(dir, ec) ? " is not a folder" : ": no such checkpoint folder"));
  use_root(dir);
}

fs::path FsCheckpointStore::absolute_folder(const std::string& root) {
  if (root.empty()) throw Error("ckpt-fs: the checkpoint folder name is empty");
  std::error_code ec;
  fs::path dir = fs::absolute(root, ec).lexically_normal();
  if (ec) throw Error("ckpt-fs: cannot resolve checkpoint folder " + root + ": " + ec.message());
  return dir;
}

void FsCheckpointStore::use_root(const fs::path& dir) {
  root_ = dir;
  pending_.clear();
  indexes_.clear();
  headers_.clear();
}

FsCheckpointStore::PendingRank& FsCheckpointStore::start_rank(int64_t step, int rank) {
  auto found = pending_.find({step, rank});
  if (found != pending_.end()) return found->second;
  const fs::path dir = staging_dir(step);
  make_folder(dir);
  // Files an interrupted earlier attempt of this rank left behind.
  const fs::path file = dir / rank_file_name(rank);
  for (const char* suffix : {"", kTmpSuffix, kSpoolSuffix}) remove_if_present(file.string() + suffix);
  PendingRank pending{PosixFile::create(file.string() + kSpoolSuffix), {}, 0, false};
  pending.header.step = step;
  pending.header.rank = rank;
  return pending_.emplace(std::make_pair(step, rank), std::move(pending)).first->second;
}

void FsCheckpointStore::write_shard(int64_t step, int rank, const ShardInfo& info, const void* host_data) {
  check_step_and_rank(step, rank);
  const std::string who = "ckpt-fs: rank " + std::to_string(rank) + " step " + std::to_string(step);
  if (info.name.empty() || info.name == "__metadata__")
    throw Error(who + ": \"" + info.name + "\" cannot name a tensor");
  std::string problem = region_problem({info.offset, info.shape}, info.global_shape);
  if (!problem.empty()) throw Error(who + ": shard of tensor '" + info.name + "': " + problem);
  const uint64_t bytes = static_cast<uint64_t>(volume(info.shape)) * dtype_size(info.dtype);
  if (bytes > 0 && host_data == nullptr)
    throw Error(who + ": shard of tensor '" + info.name + "' has no data (null pointer)");

  PendingRank& pending = start_rank(step, rank);
  if (pending.failed) throw Error(who + ": an earlier write of this rank's shards failed");
  if (pending.header.tensors.count(info.name))
    throw Error(who + ": tensor '" + info.name + "' written twice");
  pending.failed = true;
  pending.body.append(host_data, bytes);
  pending.header.tensors.emplace(
      info.name, SafetensorsEntry{info.dtype, info.shape, info.global_shape, info.offset, pending.body_bytes,
                                  pending.body_bytes + bytes, crc32c(host_data, bytes)});
  pending.body_bytes += bytes;
  pending.failed = false;
}

void FsCheckpointStore::finish_rank(int64_t step, int rank) {
  check_step_and_rank(step, rank);
  // A rank that holds nothing to save still writes its (empty) file: it says the rank finished.
  PendingRank& started = start_rank(step, rank);
  if (started.failed)
    throw Error("ckpt-fs: rank " + std::to_string(rank) + " step " + std::to_string(step) +
                ": an earlier write of this rank's shards failed");
  PendingRank pending = std::move(started);
  pending_.erase({step, rank});

  const fs::path dir = staging_dir(step);
  const fs::path file = dir / rank_file_name(rank);
  const fs::path tmp = file.string() + kTmpSuffix;
  PosixFile out = PosixFile::create(tmp);
  std::string header = encode_safetensors_header(pending.header);
  out.append(header.data(), header.size());
  out.append_file(pending.body);
  if (options_.fsync) out.sync();
  out.close();
  rename_path(tmp, file);
  if (options_.fsync) sync_directory(dir);
  pending.body.close();
  remove_if_present(file.string() + kSpoolSuffix);
}

StepIndex FsCheckpointStore::collect_index(int64_t step, int world_size, const std::string& metadata_json) {
  const std::string who = "ckpt-fs: cannot commit step " + std::to_string(step) + ": ";
  const fs::path dir = staging_dir(step);
  StepIndex index{0, step, world_size, metadata_json, {}};
  for (int rank = 0; rank < world_size; ++rank) {
    const fs::path path = dir / rank_file_name(rank);
    SafetensorsHeader header = read_safetensors_header(PosixFile::open_read(path));
    if (header.step != step || header.rank != rank)
      throw Error(who + path.string() + " holds step " + std::to_string(header.step) + " of rank " +
                  std::to_string(header.rank) + ", not rank " + std::to_string(rank));
    for (const auto& [name, entry] : header.tensors) {
      auto [it, fresh] = index.tensors.try_emplace(name, IndexTensor{entry.dtype, entry.global_shape, {}});
      IndexTensor& tensor = it->second;
      if (!fresh && (tensor.dtype != entry.dtype || tensor.global_shape != entry.global_shape))
        throw Error(who + "tensor '" + name + "' is " + dtype_name(tensor.dtype) + " " +
                    shape_string(tensor.global_shape) + " in " + tensor.shards.front().file + " but " +
                    dtype_name(entry.dtype) + " " + shape_string(entry.global_shape) + " in " +
                    rank_file_name(rank));
      tensor.shards.push_back({rank_file_name(rank), {entry.offset, entry.shape}});
    }
  }
  for (const auto& [name, tensor] : index.tensors) {
    std::string overlap = overlap_problem(tensor);
    if (!overlap.empty()) throw Error(who + "tensor '" + name + "': " + overlap);
    int64_t held = 0;
    for (const IndexShard& s : tensor.shards) held += volume(s.region.shape);
    if (held != volume(tensor.global_shape))
      throw Error(who + "tensor '" + name + "' " + shape_string(tensor.global_shape) +
                  " is incomplete: its shards hold " + std::to_string(held) + " of " +
                  std::to_string(volume(tensor.global_shape)) + " elements");
  }
  return index;
}

void FsCheckpointStore::commit(int64_t step, int world_size, const std::string& metadata_json) {
  check_step_and_rank(step, 0);
  const std::string who = "ckpt-fs: cannot commit step " + std::to_string(step) + " in " + root().string();
  if (world_size < 1) throw Error(who + ": world size " + std::to_string(world_size) + " is not positive");
  std::string metadata;
  try {
    metadata = nlohmann::json::parse(metadata_json.empty() ? "{}" : metadata_json).dump();
  } catch (const nlohmann::json::exception& e) {
    throw Error(who + ": metadata is not valid JSON: " + json_reason(e.what()));
  }

  const fs::path dir = staging_dir(step);
  std::vector<int> missing;
  for (int rank = 0; rank < world_size; ++rank) {
    std::error_code ec;
    if (!fs::exists(dir / rank_file_name(rank), ec)) missing.push_back(rank);
  }
  if (!missing.empty())
    throw Error(who + ": rank" + (missing.size() > 1 ? "s " : " ") + rank_ranges(missing) + " of " +
                std::to_string(world_size) + " did not finish (no " +
                (dir / rank_file_name(missing.front())).string() + ")");

  StepIndex index = collect_index(step, world_size, metadata);
  // Whatever else is here came from an interrupted earlier attempt (a larger world, a spool).
  for (const fs::directory_entry& entry : folder_entries(dir)) {
    const std::string name = entry.path().filename().string();
    bool ours = false;
    for (int rank = 0; rank < world_size && !ours; ++rank) ours = name == rank_file_name(rank);
    if (!ours) {
      std::error_code ec;
      fs::remove_all(entry.path(), ec);
      if (ec) throw Error(who + ": cannot remove leftover " + entry.path().string() + ": " + ec.message());
    }
  }
  write_whole_file(dir / kIndexFile, encode_step_index(index), options_.fsync);
  if (options_.fsync) sync_directory(dir);
  publish(step);
  indexes_.erase(step);
}

void FsCheckpointStore::publish(int64_t step) {
  const fs::path staging = staging_dir(step);
  const fs::path final_dir = step_dir(step);
  std::error_code ec;
  const bool replacing = fs::exists(final_dir, ec);
  if (!replacing) {
    rename_path(staging, final_dir);
  } else if (::renameat2(AT_FDCWD, staging.c_str(), AT_FDCWD, final_dir.c_str(), RENAME_EXCHANGE) != 0) {
    // Without an atomic swap the old step would be invisible for a moment; refuse instead.
    throw Error("ckpt-fs: cannot replace committed step " + std::to_string(step) + " in " +
                root().string() + ": this file system cannot swap folders atomically (" +
                std::strerror(errno) + "); remove " + final_dir.string() + " first");
  }
  if (options_.fsync) sync_directory(root());
  // Staging folders of earlier steps (and, after a swap, the replaced step) are abandoned: no
  // later write will finish them. Failing to remove them loses nothing, so errors are ignored.
  for (const fs::directory_entry& entry : folder_entries(root())) {
    auto leftover = parse_step_folder(entry.path().filename().string(), kStagingPrefix);
    if (leftover && *leftover <= step) fs::remove_all(entry.path(), ec);
  }
}

void FsCheckpointStore::remove_step(int64_t step) {
  check_step_and_rank(step, 0);
  const fs::path dir = step_dir(step);
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw Error("ckpt-fs: cannot remove step " + std::to_string(step) + ": it is not committed in " +
                root().string() + " (committed steps: " + step_list(list_steps()) + ")");
  const fs::path doomed = root() / (kRemovingPrefix + zero_padded(step, 8));
  fs::remove_all(doomed, ec);  // a removal an earlier crash interrupted
  rename_path(dir, doomed);
  if (options_.fsync) sync_directory(root());
  indexes_.erase(step);
  fs::remove_all(doomed, ec);
  if (ec) throw Error("ckpt-fs: step " + std::to_string(step) + " is no longer listed, but " + doomed.string() +
                      " could not be deleted: " + ec.message());
}

std::vector<std::string> FsCheckpointStore::discard_unfinished() {
  std::vector<std::string> removed;
  for (const fs::directory_entry& entry : folder_entries(root())) {
    const std::string name = entry.path().filename().string();
    const bool staging = parse_step_folder(name, kStagingPrefix).has_value();
    if (!staging && !parse_step_folder(name, kRemovingPrefix)) continue;
    uintmax_t bytes = 0;
    std::error_code ec;
    for (fs::recursive_directory_iterator it(entry.path(), ec), end; !ec && it != end; it.increment(ec))
      if (it->is_regular_file(ec)) bytes += it->file_size(ec);
    fs::remove_all(entry.path(), ec);
    if (ec) throw Error("ckpt-fs: cannot remove " + entry.path().string() + ": " + ec.message());
    removed.push_back("removed " + entry.path().string() + " (" + std::to_string(bytes) + " bytes), left by " +
                      (staging ? "a save that did not finish" : "a step deletion that did not finish"));
  }
  return removed;
}

uint64_t FsCheckpointStore::available_bytes() {
  struct statvfs st {};
  if (::statvfs(root().c_str(), &st) != 0) return UINT64_MAX;
  return static_cast<uint64_t>(st.f_bavail) * st.f_frsize;
}

std::vector<int64_t> FsCheckpointStore::list_steps() {
  std::vector<int64_t> steps;
  for (const fs::directory_entry& entry : folder_entries(root())) {
    auto step = parse_step_folder(entry.path().filename().string(), kStepPrefix);
    std::error_code ec;
    if (step && entry.is_directory(ec)) steps.push_back(*step);
  }
  std::sort(steps.begin(), steps.end());
  return steps;
}

const StepIndex& FsCheckpointStore::index(int64_t step) {
  check_step_and_rank(step, 0);
  const fs::path dir = step_dir(step);
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw Error("ckpt-fs: step " + std::to_string(step) + " is not committed in " + root().string() +
                " (committed steps: " + step_list(list_steps()) + ")");
  const fs::path path = dir / kIndexFile;
  PosixFile file = PosixFile::open_read(path);
  const FileStamp stamp = file.stamp();
  auto cached = indexes_.find(step);
  if (cached != indexes_.end() && cached->second.stamp == stamp) return cached->second.value;
  // An index lists each tensor's shards in a few hundred bytes; even a 175B model's is a few MB.
  constexpr uint64_t kMaxIndexBytes = 1ull << 30;
  if (file.size() > kMaxIndexBytes)
    throw Error("ckpt-fs: " + path.string() + ": bad index: " + std::to_string(file.size()) +
                " bytes is implausible for an index (the limit is 1 GiB)");
  StepIndex index = parse_step_index(read_whole_file(file), path);
  if (index.step != step)
    throw Error("ckpt-fs: " + path.string() + ": bad index: it describes step " + std::to_string(index.step));
  return (indexes_[step] = Cached<StepIndex>{stamp, std::move(index)}).value;
}

const SafetensorsHeader& FsCheckpointStore::header_of(const PosixFile& file) {
  const FileStamp stamp = file.stamp();
  auto cached = headers_.find(file.path().string());
  if (cached != headers_.end() && cached->second.stamp == stamp) return cached->second.value;
  SafetensorsHeader header = read_safetensors_header(file);
  return (headers_[file.path().string()] = Cached<SafetensorsHeader>{stamp, std::move(header)}).value;
}

std::string FsCheckpointStore::metadata(int64_t step) { return index(step).metadata_json; }

std::vector<ShardInfo> FsCheckpointStore::shards(int64_t step) {
  std::vector<ShardInfo> out;
  for (const auto& [name, tensor] : index(step).tensors)
    for (const IndexShard& s : tensor.shards)
      out.push_back(ShardInfo{name, tensor.dtype, tensor.global_shape, s.region.offset, s.region.shape});
  return out;
}

void FsCheckpointStore::read(int64_t step, const ShardInfo& want, void* host_data) {
  const StepIndex& index = this->index(step);
  const fs::path dir = step_dir(step);
  const std::string index_path = (dir / kIndexFile).string();
  auto found = index.tensors.find(want.name);
  if (found == index.tensors.end())
    throw Error("ckpt-fs: " + index_path + ": no tensor '" + excerpt(want.name) + "' in step " + std::to_string(step));
  const IndexTensor& tensor = found->second;
  const std::string what = "tensor '" + excerpt(want.name) + "'";
  if (tensor.dtype != want.dtype)
    throw Error("ckpt-fs: " + index_path + ": " + what + " is " + dtype_name(tensor.dtype) + ", " +
                dtype_name(want.dtype) + " was asked for");
  if (tensor.global_shape != want.global_shape)
    throw Error("ckpt-fs: " + index_path + ": " + what + " has global shape " +
                shape_string(tensor.global_shape) + ", " + shape_string(want.global_shape) + " was asked for");
  const Region region{want.offset, want.shape};
  std::string problem = region_problem(region, tensor.global_shape);
  if (!problem.empty()) throw Error("ckpt-fs: read of " + what + " from step " + std::to_string(step) + ": " + problem);
  if (volume(region.shape) > 0 && host_data == nullptr)
    throw Error("ckpt-fs: read of " + what + " from step " + std::to_string(step) + ": null destination");

  std::vector<std::pair<const IndexShard*, Region>> parts;
  int64_t covered = 0;
  for (const IndexShard& shard : tensor.shards) {
    if (auto part = intersect(shard.region, region)) {
      covered += volume(part->shape);
      parts.emplace_back(&shard, std::move(*part));
    }
  }
  if (covered != volume(region.shape))
    throw Error("ckpt-fs: " + index_path + ": " + what + " offset " + shape_string(region.offset) +
                " shape " + shape_string(region.shape) + " is not fully covered by its shards (" +
                std::to_string(covered) + " of " + std::to_string(volume(region.shape)) + " elements)");

  const size_t element = dtype_size(tensor.dtype);
  char* dst = static_cast<char*>(host_data);
  std::vector<char> buffer;
  for (const auto& [shard, part] : parts) {
    PosixFile file = PosixFile::open_read(dir / shard->file);
    const SafetensorsHeader& header = header_of(file);
    auto entry = header.tensors.find(want.name);
    if (entry == header.tensors.end())
      throw Error("ckpt-fs: " + file.path().string() + ": no " + what + ", though index.json lists it there");
    const SafetensorsEntry& e = entry->second;
    // A step of index version 2 or later promises a checksum for every shard: without one, nothing
    // would tell a damaged file from a good one.
    if (!e.crc32c && index.version >= 2)
      throw Error("ckpt-fs: " + file.path().string() + ": " + what +
                  " has no crc32c, which every shard of this step's format carries: the file was altered");
    if (e.dtype != tensor.dtype || e.global_shape != tensor.global_shape || e.offset != shard->region.offset ||
        e.shape != shard->region.shape)
      throw Error("ckpt-fs: " + file.path().string() + ": " + what + " is " + dtype_name(e.dtype) + " offset " +
                  shape_string(e.offset) + " shape " + shape_string(e.shape) + " of " +
                  shape_string(e.global_shape) + ", index.json says " + dtype_name(tensor.dtype) + " offset " +
                  shape_string(shard->region.offset) + " shape " + shape_string(shard->region.shape) + " of " +
                  shape_string(tensor.global_shape));
    // One read of the span of the shard that holds `part`, then scatter its runs. A shard with a
    // checksum is read whole, so the checksum can vouch for every byte used.
    std::vector<int64_t> last = part.offset;
    for (size_t d = 0; d < last.size(); ++d) last[d] += part.shape[d] - 1;
    const int64_t first_element = e.crc32c ? 0 : flat_index(shard->region, part.offset);
    const int64_t end_element = e.crc32c ? volume(e.shape) : flat_index(shard->region, last) + 1;
    buffer.resize(static_cast<size_t>(end_element - first_element) * element);
    file.read_at(buffer.data(), buffer.size(), header.data_start + e.begin + first_element * element);
    if (e.crc32c) {
      const uint32_t computed = crc32c(buffer.data(), buffer.size());
      if (computed != *e.crc32c)
        throw Error("ckpt-fs: " + file.path().string() + ": " + what + " fails its checksum (crc32c " +
                    hex32(computed) + ", stored " + hex32(*e.crc32c) + "): the file is damaged");
    }
    for_each_run(shard->region, region, part, [&](int64_t in_shard, int64_t in_want, int64_t count) {
      std::memcpy(dst + in_want * element, buffer.data() + (in_shard - first_element) * element,
                  count * element);
    });
  }
}

}  // namespace ptdp::ckptfs
