#include "data/data_files.hpp"

#include <glob.h>

#include <filesystem>
#include <memory>

#include "ptdp/error.hpp"
#include "ptdp/message_text.hpp"

namespace ptdp {

std::vector<std::string> data_files(const std::string& entry, const std::string& key) {
  if (entry.find_first_of("*?[") == std::string::npos) {
    // Found here, with the key that names it, rather than when the file is mapped.
    std::error_code ec;
    if (!std::filesystem::exists(entry, ec)) throw Error(key + ": \"" + excerpt(entry, 200) + "\": no such file");
    return {entry};
  }
  glob_t matches{};
  const int status = glob(entry.c_str(), GLOB_ERR, nullptr, &matches);
  std::unique_ptr<glob_t, void (*)(glob_t*)> owned(&matches, globfree);
  if (status == GLOB_NOMATCH) throw Error(key + ": \"" + excerpt(entry, 200) + "\" matches no file");
  if (status != 0)
    throw Error(key + ": cannot expand \"" + excerpt(entry, 200) + "\": a folder on its way cannot be read");
  // glob() sorts its matches.
  return std::vector<std::string>(matches.gl_pathv, matches.gl_pathv + matches.gl_pathc);
}

}  // namespace ptdp
