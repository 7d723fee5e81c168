#pragma once
// What a command writes, checked before anything is written, so that no mistake in its arguments
// loses data: an output that is one of its inputs, a folder where a file is asked for, or an output
// folder that already holds something is refused in one line. TemporaryFile removes what a failed
// write leaves behind.
#include <string>
#include <vector>

namespace ptdp {

// Refuses `out` when it names the same file as one of `inputs` (however either is spelled).
void refuse_output_that_is_an_input(const std::string& out, const std::vector<std::string>& inputs);

// Refuses `out` when it is a folder: the command writes a file of that name.
void refuse_folder_as_file(const std::string& out);

// Refuses `out` when it cannot be written (a folder, a missing or read-only folder, no permission):
// "<what> <out>: cannot write it: <reason>". Checked before work that ends by writing it; the file
// is left as it was.
void refuse_unwritable_file(const std::string& out, const std::string& what);

// Refuses `dir` when it exists and holds anything, or is `protected_dir` (the folder the command
// reads) or lies inside it; a folder that does not exist yet is fine.
void refuse_folder_in_use(const std::string& dir, const std::string& protected_dir);

// A file written under a temporary name: removed when this goes out of scope unless kept, so a
// failure (a full disk, an exception) never leaves it behind.
class TemporaryFile {
 public:
  explicit TemporaryFile(std::string path) : path_(std::move(path)) {}
  ~TemporaryFile();
  TemporaryFile(const TemporaryFile&) = delete;
  TemporaryFile& operator=(const TemporaryFile&) = delete;
  const std::string& path() const { return path_; }
  void keep() { kept_ = true; }

 private:
  std::string path_;
  bool kept_ = false;
};

}  // namespace ptdp
