#pragma once
// Shared by the ckpt-fs suites: a scratch folder per test, a known global tensor, and an
// independent (element by element) way to cut regions out of it.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include <ptdp/checkpoint_store.hpp>

#include "fs_checkpoint_store.hpp"

namespace ptdp::ckptfs::test {

namespace fs = std::filesystem;

class ScratchFolder {
 public:
  ScratchFolder() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = fs::temp_directory_path() /
            ("ptdp-ckpt-" + std::string(info->test_suite_name()) + "-" + info->name() + "-" +
             std::to_string(::getpid()));
    fs::remove_all(path_);
  }
  ~ScratchFolder() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

inline int64_t count_of(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// Element i of the global tensor is 0.5 * i + seed: every element distinct.
inline std::vector<float> global_values(const std::vector<int64_t>& shape, float seed = 1.0f) {
  std::vector<float> v(count_of(shape));
  for (size_t i = 0; i < v.size(); ++i) v[i] = 0.5f * static_cast<float>(i) + seed;
  return v;
}

// The elements of region (offset, shape) of a row-major global tensor, in row-major order.
inline std::vector<float> cut(const std::vector<float>& global, const std::vector<int64_t>& global_shape,
                              const std::vector<int64_t>& offset, const std::vector<int64_t>& shape) {
  std::vector<float> out;
  const int64_t n = count_of(shape);
  for (int64_t i = 0; i < n; ++i) {
    int64_t rest = i, flat = 0, stride = 1;
    for (size_t d = shape.size(); d-- > 0;) {
      flat += (offset[d] + rest % shape[d]) * stride;
      rest /= shape[d];
      stride *= global_shape[d];
    }
    out.push_back(global[flat]);
  }
  return out;
}

struct Part {
  std::vector<int64_t> offset, shape;
};

// `parts` equal slabs of `global_shape` along `dim`.
inline std::vector<Part> split(const std::vector<int64_t>& global_shape, int dim, int parts) {
  std::vector<Part> out;
  for (int r = 0; r < parts; ++r) {
    Part p{std::vector<int64_t>(global_shape.size(), 0), global_shape};
    p.shape[dim] = global_shape[dim] / parts;
    p.offset[dim] = r * p.shape[dim];
    out.push_back(p);
  }
  return out;
}

inline ShardInfo shard_info(const std::string& name, const std::vector<int64_t>& global_shape, const Part& part,
                            DType dtype = DType::F32) {
  return ShardInfo{name, dtype, global_shape, part.offset, part.shape};
}

// Rank r of a world of layout.size() writes part r of `global`, and the step is committed.
inline void save_layout(CheckpointStore& store, int64_t step, const std::string& name,
                        const std::vector<int64_t>& global_shape, const std::vector<float>& global,
                        const std::vector<Part>& layout) {
  for (size_t r = 0; r < layout.size(); ++r) {
    std::vector<float> data = cut(global, global_shape, layout[r].offset, layout[r].shape);
    store.write_shard(step, static_cast<int>(r), shard_info(name, global_shape, layout[r]), data.data());
    store.finish_rank(step, static_cast<int>(r));
  }
  store.commit(step, static_cast<int>(layout.size()), "{}");
}

inline std::vector<float> read_part(CheckpointStore& store, int64_t step, const std::string& name,
                                    const std::vector<int64_t>& global_shape, const Part& part) {
  std::vector<float> out(count_of(part.shape), -1.0f);
  store.read(step, shard_info(name, global_shape, part), out.data());
  return out;
}

// Runs `fn` and returns the ptdp::Error message it throws (fails the test if it does not).
template <class Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a ptdp::Error";
  return {};
}

}  // namespace ptdp::ckptfs::test
