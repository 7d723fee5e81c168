#pragma once
// CRC-32C (Castagnoli), the checksum each stored tensor carries so that a bit flipped on disk
// or in transit is found when the step is read back instead of loading silently. (The same
// checksum as iSCSI, ext4 metadata and Google Cloud Storage objects.)
#include <cstddef>
#include <cstdint>

namespace ptdp::ckptfs {

// Continues `crc` (0 to start) over `bytes` bytes of `data`.
uint32_t crc32c(const void* data, size_t bytes, uint32_t crc = 0);

}  // namespace ptdp::ckptfs
