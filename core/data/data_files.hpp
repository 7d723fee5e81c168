#pragma once
// The files one entry of data.path or data.val_path names. llm.c ships fineweb as a hundred
// numbered shards, so an entry may be a glob ("fineweb_train_*.bin") as well as a file.
#include <string>
#include <vector>

namespace ptdp {

// The files `entry` names, in lexical order (numbered shards stay in order). An entry without
// glob characters (*, ?, [) names itself, whether or not it exists: opening it says why not.
// Throws ptdp::Error "<key>: \"<entry>\" matches no file" for a glob that matches nothing, so a
// typo never trains on less data than meant.
std::vector<std::string> data_files(const std::string& entry, const std::string& key);

}  // namespace ptdp
